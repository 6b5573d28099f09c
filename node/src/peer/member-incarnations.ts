/**
 * Which incarnation of each member this node has seen, for the handshake. A member's incarnation is
 * made with its storage and kept with it. A member ID that presents another incarnation than the one
 * seen lost its storage and was made again under that ID (a voter told to bootstrap once more, on empty
 * storage): it would vote, and count toward commits, without what its earlier incarnation promised.
 * The handshake refuses it (etcd refuses a member that "has already been bootstrapped" likewise). A
 * new member under a voter's name (`name~token`) is another member ID, with incarnations of its own.
 */
export interface MemberIncarnations {
  /** This node's Raft member ID and its incarnation, announced to its peers. */
  readonly own: MemberIncarnation;
  /** The incarnation seen of `memberId`, or undefined while none has been. */
  seen(memberId: string): string | undefined;
  /** Records `incarnation` as seen of `memberId`; durable before it returns. */
  record(memberId: string, incarnation: string): void;
}

export interface MemberIncarnation {
  readonly memberId: string;
  readonly incarnation: string;
}

/** Incarnations held in memory, for nodes whose storage is memory too. */
export class InMemoryMemberIncarnations implements MemberIncarnations {
  private readonly seenOf = new Map<string, string>();

  constructor(readonly own: MemberIncarnation) {}

  seen(memberId: string): string | undefined {
    return this.seenOf.get(memberId);
  }

  record(memberId: string, incarnation: string): void {
    this.seenOf.set(memberId, incarnation);
  }
}
