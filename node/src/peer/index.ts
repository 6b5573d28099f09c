export type { PeerAddress } from "./peer-address.js";
export * from "./peer-errors.js";
export type { RequestOptions } from "./peer-link.js";
export type { PeerStats } from "./peer-stats.js";
export {
  type PeerInfo,
  PeerTransport,
  type PeerTransportOptions,
  type RequestHandler,
} from "./peer-transport.js";
export { decodeRaftMessage, encodeRaftMessage } from "./raft-message-codec.js";
