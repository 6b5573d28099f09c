import type { Message } from "../raft/types.js";

/**
 * How a RaftDriver reaches its peers: the PeerTransport between voters, the simulator's network when
 * it runs the driver itself.
 */
export interface RaftTransport {
  /** Sends `message`, or drops it; `released` once its bytes are no longer referenced. */
  send(message: Message, released?: () => void): void;
  /** Writes out what `send` corked so far. */
  flush(): void;
  /** The one handler of every message received. */
  onMessage(handler: (message: Message) => void): void;
}
