import { existsSync, mkdtempSync, rmSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeTestCertificates, type TestCertificates } from "@keyload/test-fixtures";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ConfigError } from "../config/config-error.js";
import { loadVoterConfig } from "../config/voter-config.js";
import { LEADER_HEADER } from "../http/leader-header.js";
import { ADMIN_KEY, singleVoterEnv } from "./test-fixtures/cluster-envs.js";
import { VoterCluster } from "./test-fixtures/voter-cluster.js";
import { startVoter } from "./voter.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 30_000 });

let certs: TestCertificates;
beforeAll(() => {
  certs = makeTestCertificates();
});
afterAll(() => certs.remove());

let cluster: VoterCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

interface HttpsAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** One request over HTTPS with the admin key, trusting `ca` (Node's default CAs when absent). */
function httpsCall(
  url: string,
  method: string,
  path: string,
  options: { ca?: string; body?: unknown; commandId?: string } = {},
): Promise<HttpsAnswer> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method,
        // A connection of its own, closed after the answer, so nothing outlives the test.
        agent: false,
        headers: {
          authorization: `Bearer ${ADMIN_KEY}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(options.commandId === undefined ? {} : { "keyload-command-id": options.commandId }),
        },
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${url}${path} timed out`)));
    req.on("error", reject);
    req.end(body);
  });
}

describe("the voter over HTTPS", () => {
  it("serves HTTPS on a wildcard bind and hands out its advertised URL, not its bind address, as the leader's", async () => {
    const c = await VoterCluster.prepare({
      env: {
        KeyLoad__Node__HttpHost: "0.0.0.0",
        KeyLoad__Tls__HttpCertFile: certs.certFile,
        KeyLoad__Tls__HttpKeyFile: certs.keyFile,
      },
    });
    cluster = c;
    const port = (i: number) => c.envs[i]!.KeyLoad__Node__HttpPort!;
    const advertised = (i: number) => `https://localhost:${port(i)}`;
    for (let i = 0; i < 3; i++) {
      c.envs[i]!.KeyLoad__Node__HttpAdvertisedUrl = advertised(i);
      await c.restart(i);
      expect(c.voter(i).httpUrl).toBe(advertised(i));
    }
    const leader = await c.waitForLeader();
    const direct = (i: number) => `https://127.0.0.1:${port(i)}`;

    expect((await httpsCall(direct(leader), "GET", "/health/live", { ca: certs.ca })).status).toBe(200);
    const put = await httpsCall(direct(leader), "PUT", "/v1/catalog/over-tls", {
      ca: certs.ca,
      body: { value: 1 },
      commandId: "over-tls-1",
    });
    expect(put.status).toBe(200);
    // Without the private CA the voter's certificate is not trusted.
    await expect(httpsCall(direct(leader), "GET", "/health/live")).rejects.toMatchObject({
      code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });

    // A follower sends its caller to the leader at the URL the leader advertised in the peer handshake.
    const follower = (leader + 1) % 3;
    const offLeader = await httpsCall(direct(follower), "POST", "/v1/admin/cluster/leader", {
      ca: certs.ca,
      body: { memberId: `voter${follower + 1}` },
    });
    expect(offLeader.status).toBe(503);
    expect(offLeader.headers[LEADER_HEADER.toLowerCase()]).toBe(
      `id="voter${leader + 1}", url="${advertised(leader)}"`,
    );
  });

  it("stops a start whose TLS files cannot be used with a ConfigError naming the setting, before touching the data dir", async () => {
    const root = mkdtempSync(join(tmpdir(), "keyload-tls-start-"));
    try {
      const dataDir = join(root, "voter1");
      const config = loadVoterConfig({
        env: singleVoterEnv(dataDir, 1, 2, {
          KeyLoad__Tls__HttpCertFile: join(root, "absent.pem"),
          KeyLoad__Tls__HttpKeyFile: certs.keyFile,
        }),
      });
      const failed = await startVoter(config, pino({ level: "silent" })).catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(ConfigError);
      expect(failed).toMatchObject({ key: "KeyLoad:Tls:HttpCertFile" });
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
