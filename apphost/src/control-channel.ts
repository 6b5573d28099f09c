import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isVoterName, type VoterName } from "./app-model.js";
import { AppHostError, ControlChannelError } from "./apphost-errors.js";

/**
 * The foreground AppHost's command socket. A voter of a foreground cluster must be started by that
 * AppHost, so it dies with it; debugging commands run from another terminal (`start voter2`, `down`)
 * therefore ask the foreground AppHost to act instead of acting themselves. One JSON line each way.
 */
export const VOTER_OPERATIONS = ["start", "stop", "kill", "restart", "pause", "resume", "replace"] as const;
export type VoterOperation = (typeof VOTER_OPERATIONS)[number];

export type ControlRequest =
  | { readonly op: VoterOperation; readonly voter: VoterName }
  | { readonly op: "down" };

type ControlReply =
  | { readonly ok: true; readonly message: string }
  | { readonly ok: false; readonly code: string; readonly message: string };

/** Unix socket paths are limited to about 100 bytes; a deep state dir gets one in the temp dir instead. */
export function controlSocketPath(stateDir: string): string {
  const beside = join(stateDir, "apphost.sock");
  if (Buffer.byteLength(beside) < 100) return beside;
  const digest = createHash("sha256").update(stateDir).digest("hex").slice(0, 16);
  return join(tmpdir(), `keyload-apphost-${digest}.sock`);
}

function parseRequest(line: string): ControlRequest | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  const r = value as { op?: unknown; voter?: unknown } | null;
  if (typeof r !== "object" || r === null) return undefined;
  if (r.op === "down") return { op: "down" };
  if (
    (VOTER_OPERATIONS as readonly unknown[]).includes(r.op) &&
    typeof r.voter === "string" &&
    isVoterName(r.voter)
  ) {
    return { op: r.op as VoterOperation, voter: r.voter };
  }
  return undefined;
}

export interface ControlServer {
  close(): Promise<void>;
}

export async function serveControl(
  socketPath: string,
  handle: (request: ControlRequest) => Promise<string>,
): Promise<ControlServer> {
  // A socket file left by an AppHost that was killed would make listen fail with EADDRINUSE.
  rmSync(socketPath, { force: true });
  const server: Server = createServer((socket) => {
    let buffered = "";
    socket.setEncoding("utf8");
    socket.on("error", () => socket.destroy());
    socket.on("data", (chunk: string) => {
      if (buffered.includes("\n")) return;
      buffered += chunk;
      const end = buffered.indexOf("\n");
      if (end < 0) return;
      const request = parseRequest(buffered.slice(0, end));
      const reply = (r: ControlReply): void => {
        socket.end(`${JSON.stringify(r)}\n`);
      };
      if (!request) {
        reply({ ok: false, code: "AppHostControlChannel", message: "the request is not understood" });
        return;
      }
      handle(request).then(
        (message) => reply({ ok: true, message }),
        (err: unknown) =>
          reply({
            ok: false,
            code: err instanceof AppHostError ? err.code : "AppHostInternal",
            message: err instanceof Error ? err.message : String(err),
          }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          rmSync(socketPath, { force: true });
          resolve();
        });
      }),
  };
}

/** Sends one request to the foreground AppHost and returns its message; throws ControlChannelError. */
export function sendControl(socketPath: string, request: ControlRequest, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let buffered = "";
    socket.setEncoding("utf8");
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new ControlChannelError(`the foreground AppHost did not answer within ${timeoutMs} ms`));
    });
    socket.on("error", (err) =>
      reject(new ControlChannelError(`cannot reach the foreground AppHost at ${socketPath}: ${err.message}`)),
    );
    socket.on("data", (chunk: string) => {
      buffered += chunk;
    });
    socket.on("end", () => {
      let reply: ControlReply;
      try {
        reply = JSON.parse(buffered) as ControlReply;
      } catch {
        reject(new ControlChannelError("the foreground AppHost sent an unreadable answer"));
        return;
      }
      if (reply.ok) resolve(reply.message);
      else reject(new ControlChannelError(reply.message, reply.code));
    });
    socket.write(`${JSON.stringify(request)}\n`);
  });
}
