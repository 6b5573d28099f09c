/**
 * Where the peer transport reaches a voter: its ID and the host and port of its peer listener. The
 * transport owns this type; the voter's configuration (`KeyLoad:Cluster:Voters`) parses into it.
 */
export interface PeerAddress {
  readonly id: string;
  readonly host: string;
  readonly port: number;
}
