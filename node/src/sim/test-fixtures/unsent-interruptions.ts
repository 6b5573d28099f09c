import { PeerInterruptedError, PeerUnavailableError } from "../../peer/peer-errors.js";
import type { ForwardTransport } from "../../voter/command-router.js";

/**
 * A peer transport that reports a request it sent but got no answer to (timed out, or its connection
 * lost) as never sent. A router that believes it forwards the command again to the next leader, or
 * answers that nothing was submitted, though the first leader may have committed it.
 */
export function unsentInterruptions(transport: ForwardTransport): ForwardTransport {
  return {
    peerInfo: (peerId) => transport.peerInfo(peerId),
    request: (peerId, channel, body, options) =>
      transport.request(peerId, channel, body, options).catch((error: unknown) => {
        if (error instanceof PeerInterruptedError) throw new PeerUnavailableError(peerId, "not sent");
        throw error;
      }),
  };
}
