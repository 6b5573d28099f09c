import type { FastifyReply } from "fastify";

/**
 * Answers an HTTP admission refusal (a 429 decided in the first hook, holding no slot) only after
 * `delayMs`, keeping the connection. A client that resends at once on every refusal, ignoring
 * Retry-After, otherwise spins: each refusal costs the voter little, but thousands a second take the
 * event loop and the CPU from admitted work, and keep the voter reading flooding sockets before the one
 * carrying a control command. Delayed, each such connection is refused at most once per delay, and the
 * connection stays busy meanwhile, so a client sharing it does not send a control request into the wait
 * but on another connection. A request refused for want of a slot spent the delay waiting for one
 * (HttpAdmissionGovernor.reserveOrWait): what is left of it to pace is nothing (ErrorReplies).
 */
export function sendPaced(reply: FastifyReply, delayMs: number, send: () => void): void {
  if (delayMs <= 0) {
    send();
    return;
  }
  const socket = reply.raw.socket;
  const timer = setTimeout(() => {
    socket?.off("close", cancel);
    if (socket === null || !socket.destroyed) send();
  }, delayMs);
  timer.unref();
  const cancel = (): void => clearTimeout(timer);
  socket?.once("close", cancel);
}
