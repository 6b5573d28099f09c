import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { APPHOST_USER_AGENT } from "./apphost-poll.js";
import { LogFeed } from "./dashboard-log-feed.js";
import type { LogRow } from "./dashboard-messages.js";

const line = (msg: string, time: number, extra: Record<string, unknown> = {}): string =>
  `${JSON.stringify({ level: 30, time, msg, ...extra })}\n`;

let dir: string;
let feed: LogFeed | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-log-feed-"));
});

afterEach(() => {
  feed?.stop();
  feed = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("LogFeed", () => {
  it("keeps the last rows of each log, without the AppHost's polls, then hands on what is appended", async () => {
    const voter1 = join(dir, "voter1.log");
    const voter2 = join(dir, "voter2.log");
    writeFileSync(
      voter1,
      [
        line("old", 1),
        line("started", 3),
        line("request", 4, { route: "/health/ready" }),
        // The AppHost's own polls, as a voter logs them.
        line("request", 5, {
          method: "GET",
          route: "/v1/admin/admission",
          status: 200,
          principalId: "admin",
          userAgent: APPHOST_USER_AGENT,
        }),
        line("request", 6, {
          method: "GET",
          route: "/metrics",
          status: 200,
          principalId: "admin",
          userAgent: APPHOST_USER_AGENT,
        }),
        line("stored", 7, { route: "/v1/catalog/{key}" }),
      ].join(""),
    );
    // A line being written when the feed starts is left for the follower.
    writeFileSync(voter2, `${line("elected", 2)}{"level":30,"time":8,"msg":"half`);
    feed = new LogFeed({
      logs: [
        { voter: "voter1", file: voter1 },
        { voter: "voter2", file: voter2 },
      ],
      keepRows: 2,
      tailBytes: 64 * 1024,
    });
    expect(feed.rows().map((r) => `${r.voter}:${r.msg}`)).toEqual([
      "voter2:elected",
      "voter1:started",
      "voter1:stored",
    ]);

    const seen: LogRow[] = [];
    feed.subscribe((rows) => seen.push(...rows));
    appendFileSync(voter2, ` done"}\n`);
    appendFileSync(voter1, line("request", 9, { route: "/health/live" }) + line("snapshot taken", 10));
    await expect
      .poll(() => seen.map((r) => `${r.voter}:${r.msg}`).sort())
      .toEqual(["voter1:snapshot taken", "voter2:half done"]);
    // Each voter keeps its last `keepRows`.
    expect(feed.rows().map((r) => `${r.voter}:${r.msg}`)).toEqual([
      "voter2:elected",
      "voter1:stored",
      "voter2:half done",
      "voter1:snapshot taken",
    ]);
  });
});
