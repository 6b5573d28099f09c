import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isVoterName, type VoterName } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { AppHostError, PortInUseError } from "./apphost-errors.js";
import { type Asset, loadAssets } from "./dashboard-assets.js";
import { LogFeed } from "./dashboard-log-feed.js";
import type { ActionReply, DashboardAction, DashboardHello } from "./dashboard-messages.js";
import { DASHBOARD_PORT_REMEDY } from "./dashboard-port.js";
import { DashboardSampler } from "./dashboard-sampler.js";

/** The cluster a dashboard shows, and how its actions are carried out. */
export interface DashboardSource {
  readonly stateDir: string;
  readonly adminKeyFile: string;
  readonly logs: readonly { readonly voter: string; readonly file: string }[];
  /** The actions the page offers; anything else is refused. */
  readonly actions: readonly DashboardAction[];
  /** Carries out one action, as the CLI's voter commands do, and says what happened. */
  operate(action: DashboardAction, voter: VoterName): Promise<string>;
}

export interface DashboardOptions {
  /** 0 for any free port. */
  readonly port: number;
  readonly assetsDir?: string;
  readonly intervalMs?: number;
  /** How far an event stream's reader may fall behind before the stream is closed (bytes unsent). */
  readonly maxUnsentBytes?: number;
}

export interface Dashboard {
  readonly url: string;
  /** Stops serving and reading the cluster; closing again does nothing. */
  close(): Promise<void>;
}

const SAMPLE_INTERVAL_MS = 1_000;
const HISTORY_POINTS = 120;
const LOG_ROWS_PER_VOTER = 500;
const LOG_TAIL_BYTES = 256 * 1024;
/** Proxies and browsers close an event stream that stays silent too long. */
const KEEPALIVE_MS = 15_000;
/**
 * A page that stops reading (a stalled tab, a suspended laptop) would otherwise have every event kept for
 * it in the AppHost's memory. Its stream is closed instead; the page reconnects and is greeted afresh.
 */
const MAX_UNSENT_BYTES = 8 * 1024 * 1024;

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
} as const;

const ACTION_PATH = /^\/api\/voters\/([^/]+)\/([a-z-]+)$/;

function send(response: ServerResponse, status: number, contentType: string, body: string | Buffer): void {
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": contentType,
    "cache-control": "no-store",
  });
  response.end(body);
}

function reply(response: ServerResponse, status: number, body: ActionReply): void {
  send(response, status, "application/json", JSON.stringify(body));
}

/**
 * The AppHost's dashboard: the built page and a small API on loopback alone. `GET /api/events` streams
 * the cluster (server-sent events); `POST /api/voters/{voter}/{action}` carries out an action. The
 * admin key never leaves the AppHost. Requests must name this server as their host (against DNS
 * rebinding), and an action must come as JSON from the page's own origin (against a cross-site form).
 */
export async function serveDashboard(source: DashboardSource, options: DashboardOptions): Promise<Dashboard> {
  const assets = loadAssets(options.assetsDir);
  const host = APPHOST_DEFAULTS.host;
  const sampler = new DashboardSampler({
    stateDir: source.stateDir,
    intervalMs: options.intervalMs ?? SAMPLE_INTERVAL_MS,
    historyPoints: HISTORY_POINTS,
  });
  const logFeed = new LogFeed({ logs: source.logs, keepRows: LOG_ROWS_PER_VOTER, tailBytes: LOG_TAIL_BYTES });
  const streams = new Set<ServerResponse>();
  const maxUnsentBytes = options.maxUnsentBytes ?? MAX_UNSENT_BYTES;
  let port = options.port;

  const ownHosts = (): Set<string> => new Set([`${host}:${port}`, `localhost:${port}`]);

  const events = (response: ServerResponse): void => {
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    const write = (text: string): void => {
      if (response.writableLength > maxUnsentBytes) response.destroy();
      else response.write(text);
    };
    const emit = (event: string, data: unknown): void => {
      write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const hello: DashboardHello = {
      stateDir: source.stateDir,
      adminKeyFile: source.adminKeyFile,
      voters: source.logs.map((log) => log.voter),
      actions: source.actions,
      snapshot: sampler.latest(),
      history: sampler.admissionHistory(),
      logs: logFeed.rows(),
    };
    emit("hello", hello);
    const unsubscribe = [
      sampler.subscribe((snapshot) => emit("snapshot", snapshot)),
      logFeed.subscribe((rows) => emit("logs", rows)),
    ];
    const keepalive = setInterval(() => write(": keepalive\n\n"), KEEPALIVE_MS);
    streams.add(response);
    response.on("close", () => {
      clearInterval(keepalive);
      for (const off of unsubscribe) off();
      streams.delete(response);
    });
  };

  const action = async (request: IncomingMessage, response: ServerResponse, path: string): Promise<void> => {
    const match = ACTION_PATH.exec(path);
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== `http://${request.headers.host}`) {
      reply(response, 403, { ok: false, code: "AppHostDashboardOrigin", message: "not from the dashboard" });
      return;
    }
    if (!request.headers["content-type"]?.startsWith("application/json")) {
      reply(response, 415, { ok: false, code: "AppHostDashboardRequest", message: "send JSON" });
      return;
    }
    const voter = match?.[1] ?? "";
    const name = (match?.[2] ?? "") as DashboardAction;
    if (!isVoterName(voter) || !source.actions.includes(name)) {
      reply(response, 404, {
        ok: false,
        code: "AppHostDashboardRequest",
        message: `no action ${name} on ${voter}`,
      });
      return;
    }
    try {
      reply(response, 200, { ok: true, message: await source.operate(name, voter) });
    } catch (err) {
      const known = err instanceof AppHostError;
      reply(response, known ? 409 : 500, {
        ok: false,
        code: known ? err.code : "AppHostInternal",
        message: err instanceof Error ? err.message : String(err),
      });
    }
  };

  const server = createServer((request, response) => {
    if (!ownHosts().has(request.headers.host ?? "")) {
      send(response, 421, "text/plain", "this dashboard answers on 127.0.0.1 only");
      return;
    }
    const path = pathOf(request.url);
    if (path === undefined) {
      // Any page can make a browser send one (an image's source): it must not end the AppHost.
      send(response, 400, "text/plain", "the request target is not a path");
      return;
    }
    if (request.method === "POST" && path.startsWith("/api/voters/")) {
      // The body carries nothing; it is drained so the connection can be reused.
      request.resume();
      void action(request, response, path);
      return;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      send(response, 405, "text/plain", "method not allowed");
      return;
    }
    if (path === "/api/events") {
      events(response);
      return;
    }
    const asset: Asset | undefined = assets.get(path === "/" ? "/index.html" : path);
    if (asset === undefined) {
      send(response, 404, "text/plain", "not found");
      return;
    }
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": asset.contentType,
      // Vite names every asset by its content; the page itself must always be the current one.
      "cache-control": path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    });
    response.end(request.method === "HEAD" ? undefined : asset.body);
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host, port: options.port, exclusive: true }, () => resolve());
    });
  } catch (err) {
    logFeed.stop();
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE")
      throw new PortInUseError(options.port, host, "dashboard", DASHBOARD_PORT_REMEDY);
    throw err;
  }
  port = (server.address() as AddressInfo).port;
  sampler.start();

  let closed: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        sampler.stop();
        logFeed.stop();
        for (const stream of streams) stream.end();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/** The path of a request target, or undefined for one that is not an origin-form path URL can read. */
function pathOf(target: string | undefined): string | undefined {
  if (target === undefined || !target.startsWith("/")) return undefined;
  try {
    return new URL(target, "http://dashboard.invalid").pathname;
  } catch {
    return undefined;
  }
}
