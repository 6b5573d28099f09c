/**
 * Summarises a V8 `.cpuprofile` (as written by `node --cpu-prof`): where the sampled time went, by
 * area (idle, GC, a package, a folder of KeyLoad's source, Node internals), by function (self time)
 * and by function including callees, within a window of the profile.
 *
 *   pnpm --filter @keyload/scripts exec tsx bench/cpu-profile-summary.ts FILE.cpuprofile
 *     [--from SECONDS] [--to SECONDS] [--top 25]
 *
 * --from and --to are seconds since the profile started (to leave out start-up and shutdown).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { scriptArgs } from "./script-args.js";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

interface ProfileSummary {
  /** Milliseconds of samples in the window. */
  readonly windowMs: number;
  readonly profileMs: number;
  readonly byArea: readonly [string, number][];
  readonly bySelf: readonly [string, number][];
  readonly byTotal: readonly [string, number][];
}

function shortUrl(url: string): string {
  if (url === "") return "";
  const path = url.replace(/^file:\/\//, "");
  const pkg = path.match(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/);
  if (pkg) return `${pkg[1]}/${pkg[2]}`;
  const own = path.match(/\/(node|client|contract|apphost|scripts)\/src\/(.*)$/);
  if (own) return `${own[1]}/src/${own[2]}`;
  return path;
}

function area(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === "") {
    if (functionName === "(idle)" || functionName === "(program)" || functionName === "(garbage collector)") {
      return functionName;
    }
    return "(native)";
  }
  if (url.startsWith("node:")) return "node internals";
  const pkg = url.match(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\//);
  if (pkg) return pkg[1]!;
  const own = url.match(/\/(node|client|contract|apphost|scripts)\/src\/([^/]+)\//);
  if (own) return `${own[1]}/src/${own[2]}`;
  return shortUrl(url);
}

function label(frame: CallFrame): string {
  const name = frame.functionName || "(anonymous)";
  const where = shortUrl(frame.url);
  return where ? `${name}  ${where}:${frame.lineNumber + 1}` : name;
}

function summariseProfile(profile: CpuProfile, fromSeconds = 0, toSeconds = Infinity): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const areaMs = new Map<string, number>();
  const selfMs = new Map<string, number>();
  const totalMs = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, ms: number): void => {
    map.set(key, (map.get(key) ?? 0) + ms);
  };
  let windowMs = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    // A sample stands for the time until the next one.
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const since = (t - profile.startTime) / 1e6;
    if (since < fromSeconds || since > toSeconds) continue;
    const node = byId.get(profile.samples[i]!);
    if (!node) continue;
    windowMs += ms;
    add(areaMs, area(node.callFrame), ms);
    add(selfMs, label(node.callFrame), ms);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const key = label(byId.get(id)!.callFrame);
      if (key === "(root)" || seen.has(key)) continue;
      seen.add(key);
      add(totalMs, key, ms);
    }
  }
  const sorted = (map: Map<string, number>): [string, number][] => [...map].sort((a, b) => b[1] - a[1]);
  return {
    windowMs,
    profileMs: (profile.endTime - profile.startTime) / 1000,
    byArea: sorted(areaMs),
    bySelf: sorted(selfMs),
    byTotal: sorted(totalMs),
  };
}

function formatProfileSummary(summary: ProfileSummary, top = 25): string {
  const busyMs = summary.windowMs - (summary.byArea.find(([a]) => a === "(idle)")?.[1] ?? 0);
  const pct = (ms: number, of: number): string => `${((100 * ms) / of).toFixed(1).padStart(5)} %`;
  const lines = [
    `window ${(summary.windowMs / 1000).toFixed(1)} s of ${(summary.profileMs / 1000).toFixed(1)} s, ` +
      `busy (not idle) ${(busyMs / 1000).toFixed(1)} s; percentages are of busy time`,
    "",
    "by area:",
  ];
  for (const [name, ms] of summary.byArea.slice(0, top)) {
    if (name !== "(idle)") lines.push(`  ${pct(ms, busyMs)}  ${name}`);
  }
  lines.push("", "by function, self time:");
  for (const [name, ms] of summary.bySelf.slice(0, top)) {
    if (name !== "(idle)") lines.push(`  ${pct(ms, busyMs)}  ${name}`);
  }
  lines.push("", "by function, including callees:");
  for (const [name, ms] of summary.byTotal.slice(0, top)) {
    if (name !== "(idle)") lines.push(`  ${pct(ms, busyMs)}  ${name}`);
  }
  return lines.join("\n");
}

function main(): void {
  const { values, positionals } = parseArgs({
    args: scriptArgs(),
    allowPositionals: true,
    options: {
      from: { type: "string", default: "0" },
      to: { type: "string" },
      top: { type: "string", default: "25" },
    },
  });
  if (positionals.length === 0)
    throw new Error("usage: cpu-profile-summary.ts FILE.cpuprofile [--from S] [--to S]");
  for (const file of positionals) {
    const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
    const summary = summariseProfile(profile, Number(values.from), values.to ? Number(values.to) : Infinity);
    console.log(`== ${file}`);
    console.log(formatProfileSummary(summary, Number(values.top)));
    console.log("");
  }
}

main();
