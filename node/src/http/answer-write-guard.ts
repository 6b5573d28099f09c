import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * Ends the connection of an answer its client stopped reading. Node bounds a request's arrival
 * (`requestTimeout`) and an idle connection (`keepAliveTimeout`), but nothing bounds the writing of an
 * answer: a client that pauses its socket while a large answer is on its way would keep the answer's
 * HTTP slot, and its admission, for as long as it keeps the connection open. The answer's bytes still
 * queued on the socket are sampled every half `timeoutMs`; when they have not moved in that time, the
 * connection is destroyed, which ends the request as aborted and releases its slot. Waiting before the
 * answer is written (a command replicating, a slot queue) is not write time and is not counted.
 */
export function guardAnswerWrite(response: ServerResponse, socket: Socket, timeoutMs: number): void {
  const period = Math.max(1, Math.floor(timeoutMs / 2));
  let queued = socket.writableLength;
  const check = (): void => {
    if (response.writableFinished || socket.destroyed) return;
    const now = socket.writableLength;
    if (now > 0 && now === queued) {
      socket.destroy();
      return;
    }
    queued = now;
    timer = setTimeout(check, period).unref();
  };
  let timer = setTimeout(check, period).unref();
  response.once("close", () => clearTimeout(timer));
}
