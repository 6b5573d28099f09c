import { readFileSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { call, metricsText } from "./test-fixtures/voter-cluster.js";
import { waitFor } from "./test-fixtures/wait-for.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();

describe("three voters on loopback", () => {
  it("elect a leader, replicate, forward from followers and answer quorum reads everywhere", async () => {
    const cluster = await startCluster();
    const leader = await cluster.waitForLeader();
    const follower = (leader + 1) % 3;
    const put = await call(cluster.voter(leader).httpUrl, "PUT", "/v1/catalog/a%2Fb", {
      body: { value: { n: 1 } },
      commandId: "w1",
    });
    expect(put).toMatchObject({ status: 200, body: { commandId: "w1", key: "a/b", version: 1 } });
    // Written through a follower, which forwards to the leader: the payload's text survives the trip.
    const viaFollower = await call(cluster.voter(follower).httpUrl, "PUT", "/v1/catalog/a%2Fb", {
      body: { value: { n: 2, s: "é€😀" }, expectedVersion: 1 },
      commandId: "w2",
    });
    expect(viaFollower).toMatchObject({ status: 200, body: { version: 2 } });
    for (let i = 0; i < 3; i++) {
      const got = await call(cluster.voter(i).httpUrl, "GET", "/v1/catalog/a%2Fb");
      expect(got).toMatchObject({
        status: 200,
        body: { key: "a/b", value: { n: 2, s: "é€😀" }, version: 2 },
      });
    }
  });

  it("answers a retry with the same command ID from the durable outcome, and a different body with a conflict", async () => {
    const cluster = await startCluster();
    const leader = await cluster.waitForLeader();
    const url = cluster.voter((leader + 2) % 3).httpUrl;
    const first = await call(url, "PUT", "/v1/catalog/k", { body: { value: 1 }, commandId: "same" });
    const again = await call(url, "PUT", "/v1/catalog/k", { body: { value: 1 }, commandId: "same" });
    expect(again.body).toEqual(first.body);
    const other = await call(url, "PUT", "/v1/catalog/k", { body: { value: 2 }, commandId: "same" });
    expect(other).toMatchObject({
      status: 409,
      body: { error: { code: "CommandIdConflict", commandId: "same" } },
    });
    const outcome = await call(url, "GET", "/v1/commands/same");
    expect(outcome).toMatchObject({ status: 200, body: { commandId: "same", status: "committed" } });
    const doc = await call(url, "GET", "/v1/catalog/k");
    expect(doc.body).toMatchObject({ value: 1, version: 1 });
  });

  it("returns the leader's explicit admission rejection unchanged through a follower, before the ID is taken", async () => {
    // voter1 alone has a tiny data lane; the others admit the command locally and forward it.
    const cluster = await startCluster({
      voterEnv: { 0: { KeyLoad__CommandAdmission__MaxRetainedBytes: "5000" } },
    });
    let leader = await cluster.waitForLeader();
    if (leader !== 0) {
      cluster.voter(leader).driver.raft.transferLeadership("voter1");
      const deadline = Date.now() + 5000;
      while (!cluster.voter(0).driver.isLeader() && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      leader = await cluster.waitForLeader();
    }
    expect(leader).toBe(0);
    const big = { value: "x".repeat(2000) };
    const refused = await call(cluster.voter(1).httpUrl, "PUT", "/v1/catalog/big", {
      body: big,
      commandId: "r1",
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      error: {
        code: "ResourceExhausted",
        reason: "CommandBytes",
        commandId: "r1",
        details: { governor: "command", lane: "data", leader: true },
      },
    });
    expect(refused.headers.get("retry-after")).not.toBeNull();
    // The leader's governor refused it, so the leader counts it.
    const metrics = await metricsText(cluster.voter(0).httpUrl);
    expect(metrics).toContain(
      'keyload_command_admission_rejections_total{lane="data",reason="CommandBytes"} 1',
    );
    // Every lane's reasons are there from zero, for rate() and the dashboard to see their first.
    expect(metrics).toContain(
      'keyload_command_admission_rejections_total{lane="control",reason="ControlPayloadTooLarge"} 0',
    );
    expect(metrics).toContain('keyload_command_admission_rejections_total{lane="data",reason="DiskFloor"} 0');
    // The follower, which forwarded it, refused nothing itself.
    const followerMetrics = await metricsText(cluster.voter(1).httpUrl);
    expect(followerMetrics).toContain(
      'keyload_command_admission_rejections_total{lane="data",reason="CommandBytes"} 0',
    );
    // The leader's own client gets the same refusal, said to be the leader's.
    const direct = await call(cluster.voter(0).httpUrl, "PUT", "/v1/catalog/big", {
      body: big,
      commandId: "r0",
    });
    expect(direct.body).toMatchObject({ error: { details: { lane: "data", leader: true } } });
    // Nothing took the ID: it commits other work afterwards.
    expect((await call(cluster.voter(1).httpUrl, "GET", "/v1/commands/r1")).status).toBe(404);
    const reused = await call(cluster.voter(1).httpUrl, "POST", "/v1/dispatch/ops", {
      body: { directive: "drain" },
      commandId: "r1",
    });
    expect(reused.status).toBe(200);
    const status = await call(cluster.voter(0).httpUrl, "GET", "/v1/admin/admission");
    expect(status.body).toMatchObject({
      nodeId: "voter1",
      commandAdmission: { data: { commands: 0, retainedBytes: 0 } },
    });
    // Once voter1 follows, its tiny lane is its own: its refusal says so, and another voter takes it.
    cluster.voter(0).driver.raft.transferLeadership("voter2");
    const deadline = Date.now() + 5000;
    while (!cluster.voter(1).driver.isLeader() && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(await cluster.waitForLeader()).toBe(1);
    const local = await call(cluster.voter(0).httpUrl, "PUT", "/v1/catalog/big", {
      body: big,
      commandId: "r2",
    });
    expect(local).toMatchObject({
      status: 429,
      body: { error: { reason: "CommandBytes", details: { governor: "command", leader: false } } },
    });
    const elsewhere = await call(cluster.voter(2).httpUrl, "PUT", "/v1/catalog/big", {
      body: big,
      commandId: "r2",
    });
    expect(elsewhere.status).toBe(200);
  });

  it("keeps acknowledged writes across a restart of every voter", async () => {
    const cluster = await startCluster();
    const leader = await cluster.waitForLeader();
    for (let i = 0; i < 20; i++) {
      const r = await call(cluster.voter(leader).httpUrl, "PUT", `/v1/catalog/k${i}`, {
        body: { value: i },
        commandId: `c${i}`,
      });
      expect(r.status).toBe(200);
    }
    for (let i = 0; i < 3; i++) await cluster.restart(i);
    await cluster.waitForLeader();
    for (let i = 0; i < 20; i += 7) {
      const r = await call(cluster.voter(i % 3).httpUrl, "GET", `/v1/catalog/k${i}`);
      expect(r.body).toMatchObject({ value: i, version: 1 });
    }
  });

  it("answers Unavailable, not UnknownWriteOutcome, when no leader appears within a short deadline", async () => {
    // The deadline is below three election timeouts, so the wait for a leader must end before it.
    const cluster = await startCluster({
      env: { KeyLoad__Raft__ElectionTimeoutMs: "1000", KeyLoad__Raft__ReplicationDeadlineMs: "300" },
    });
    const leader = await cluster.waitForLeader();
    await cluster.stop((leader + 1) % 3);
    await cluster.stop((leader + 2) % 3);
    const alone = cluster.voter(leader);
    const deadline = Date.now() + 5000;
    while (alone.driver.isLeader() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(alone.driver.isLeader()).toBe(false);
    const r = await call(alone.httpUrl, "PUT", "/v1/catalog/k", { body: { value: 1 }, commandId: "lonely" });
    expect(r).toMatchObject({
      status: 503,
      body: { error: { code: "Unavailable", reason: "NoLeader", commandId: "lonely" } },
    });
  });

  it("hands leadership over when the leader shuts down, and reopens its storage on restart", async () => {
    // Elections wait at least 2 s here, so a leader within the next moment can only come from a transfer.
    const cluster = await startCluster({
      env: { KeyLoad__Raft__ElectionTimeoutMs: "2000", KeyLoad__Raft__HeartbeatIntervalMs: "50" },
    });
    const leader = await cluster.waitForLeader();
    const put = await call(cluster.voter(leader).httpUrl, "PUT", "/v1/catalog/k", {
      body: { value: 1 },
      commandId: "before-stop",
    });
    expect(put.status).toBe(200);
    await cluster.stop(leader);
    const others = [0, 1, 2].filter((i) => i !== leader);
    // Well short of the 2 s an election waits, with room for a loaded machine.
    const deadline = Date.now() + 1500;
    while (!others.some((i) => cluster.voter(i).driver.isLeader()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    expect(others.some((i) => cluster.voter(i).driver.isLeader())).toBe(true);
    await cluster.restart(leader);
    await cluster.waitForLeader();
    const read = await call(cluster.voter(leader).httpUrl, "GET", "/v1/catalog/k");
    expect(read).toMatchObject({ status: 200, body: { value: 1, version: 1 } });
  });

  it("catches a follower up with a snapshot once the leader has compacted what it missed", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__Raft__SnapshotIntervalEntries: "20" },
    });
    const leader = await cluster.waitForLeader();
    const behind = (leader + 1) % 3;
    await cluster.stop(behind);
    // Far more than the 20 entries a snapshot keeps behind it: the leader's log no longer starts where
    // the stopped follower's ends, so only a snapshot can bring it back.
    for (let i = 0; i < 120; i++) {
      const r = await call(cluster.voter(leader).httpUrl, "PUT", `/v1/catalog/k${i}`, {
        body: { value: i },
        commandId: `c${i}`,
      });
      expect(r.status).toBe(200);
    }
    await cluster.restart(behind);
    await cluster.waitForLeader();
    // The leader's log stands on a snapshot point with no file: it copies its state once the follower
    // asks, and a read there waits for none of that, so it may time out (503) until the copy arrives.
    const url = cluster.voter(behind).httpUrl;
    await waitFor(async () => (await call(url, "GET", "/v1/catalog/k119")).status === 200, "the catch-up");
    for (const i of [0, 60, 119]) {
      const r = await call(url, "GET", `/v1/catalog/k${i}`);
      expect(r).toMatchObject({ status: 200, body: { value: i, version: 1 } });
    }
  });

  it("exports the process's event-loop delay, memory, CPU and GC", async () => {
    const cluster = await startCluster();
    await cluster.waitForLeader();
    const text = await metricsText(cluster.voter(1).httpUrl);
    for (const name of [
      "nodejs_eventloop_lag_p99_seconds",
      "process_resident_memory_bytes",
      "process_cpu_seconds_total",
      "nodejs_heap_size_used_bytes",
    ]) {
      const line = text.split("\n").find((l) => l.startsWith(`${name} `));
      expect(line, name).toBeDefined();
      expect(Number(line!.slice(name.length + 1)), name).toBeGreaterThanOrEqual(0);
    }
    expect(text).toContain("nodejs_gc_duration_seconds");
  });

  it("exports the peer transport's counters per peer, a refused handshake among them", async () => {
    const cluster = await startCluster();
    await cluster.waitForLeader();
    const scrape = async () => metricSamples(await metricsText(cluster.voter(0).httpUrl));
    const traffic = ["sent_frames", "sent_bytes", "received_frames", "received_bytes"].flatMap((counter) =>
      ["voter2", "voter3"].map((peer) => `keyload_peer_${counter}_total{peer="${peer}"}`),
    );
    let samples = await scrape();
    for (let deadline = Date.now() + 5_000; Date.now() < deadline; samples = await scrape()) {
      if (traffic.every((sample) => (samples.get(sample) ?? 0) > 0)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const sample of traffic) expect(samples.get(sample), sample).toBeGreaterThan(0);
    expect(samples.has('keyload_peer_reconnects_total{peer="voter2"}')).toBe(true);
    expect(samples.get("keyload_peer_handshakes_over_cap_total")).toBe(0);
    expect(total(samples, "keyload_peer_auth_failures_total")).toBe(0);
    // voter3 comes back without the cluster secret: voter1 refuses its handshakes and counts them.
    cluster.envs[2]!.KeyLoad__Cluster__Secret = "not-the-cluster-secret-0123";
    await cluster.restart(2);
    const deadline = Date.now() + 10_000;
    while (total(await scrape(), "keyload_peer_auth_failures_total") === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(total(await scrape(), "keyload_peer_auth_failures_total")).toBeGreaterThan(0);
  });

  it("exports its build, the leader changes it saw, and fsync and apply latencies", async () => {
    const cluster = await startCluster();
    const leader = await cluster.waitForLeader();
    const put = await call(cluster.voter(leader).httpUrl, "PUT", "/v1/catalog/m", {
      body: { value: 1 },
      commandId: "m1",
    });
    expect(put.status).toBe(200);
    const text = await metricsText(cluster.voter(leader).httpUrl);
    for (const [name, type] of [
      ["keyload_build_info", "gauge"],
      ["keyload_log_fsync_duration_seconds", "histogram"],
      ["keyload_apply_duration_seconds", "histogram"],
      ["keyload_raft_leader_changes_total", "counter"],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}\n`);
    }
    const samples = metricSamples(text);
    expect(samples.get("keyload_log_fsync_duration_seconds_count")).toBeGreaterThan(0);
    expect(samples.get("keyload_log_fsync_duration_seconds_sum")).toBeGreaterThan(0);
    expect(samples.get("keyload_apply_duration_seconds_count")).toBeGreaterThan(0);
    expect(samples.get('keyload_apply_duration_seconds_bucket{le="+Inf"}')).toBe(
      samples.get("keyload_apply_duration_seconds_count"),
    );
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    expect(samples.get(`keyload_build_info{version="${version}",node_version="${process.version}"}`)).toBe(1);
    // Every voter saw its first leader; the old leader sees the one it hands over to.
    const changes = async (i: number) =>
      metricSamples(await metricsText(cluster.voter(i).httpUrl)).get("keyload_raft_leader_changes_total") ??
      0;
    const until = async (done: () => Promise<boolean>) => {
      for (const deadline = Date.now() + 5_000; !(await done()) && Date.now() < deadline; )
        await new Promise((r) => setTimeout(r, 20));
    };
    await until(async () => (await Promise.all([0, 1, 2].map(changes))).every((n) => n >= 1));
    for (let i = 0; i < 3; i++) expect(await changes(i)).toBeGreaterThanOrEqual(1);
    const before = await changes(leader);
    cluster.voter(leader).driver.raft.transferLeadership(`voter${((leader + 1) % 3) + 1}`);
    await until(async () => (await changes(leader)) > before);
    expect(await changes(leader)).toBeGreaterThan(before);
  });

  it("refuses to join a voter whose canonical limits differ", async () => {
    const cluster = await startCluster({ voterEnv: { 2: { KeyLoad__Canonical__MaxLeaseBatch: "7" } } });
    const deadline = Date.now() + 5000;
    // Led by voter1 or voter2, and voter1 holds the admin the leader proposed once it led.
    while (
      !(
        (cluster.voter(0).driver.isLeader() || cluster.voter(1).driver.isLeader()) &&
        cluster.voter(0).hasBootstrapAdmin()
      ) &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const ok = await call(cluster.voter(0).httpUrl, "PUT", "/v1/catalog/x", {
      body: { value: 1 },
      commandId: "x1",
    });
    expect(ok.status).toBe(200);
    expect(cluster.voter(2).driver.status().leader).toBeNull();
    // Nothing but its own bootstrap entry.
    expect(cluster.voter(2).driver.status().commit).toBe(1);
  });
});

/** Every sample of a `/metrics` text, by its name and labels as written: `name{peer="voter2"}`. */
function metricSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** A metric's samples summed over all their labels. */
function total(samples: ReadonlyMap<string, number>, name: string): number {
  let sum = 0;
  for (const [sample, value] of samples) if (sample === name || sample.startsWith(`${name}{`)) sum += value;
  return sum;
}
