import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { MemberKind } from "./voter-health.js";

/**
 * What `status` last saw each voter be in the configuration, kept in the state dir (`members.json`).
 * The contract's `member` is `voter` or `learner`: a voter no running voter can speak for (all are
 * stopped, say) shows what it was when last seen, and `voter` before anything was seen, as the
 * AppHost bootstraps every voter as one.
 */
export function recallMembers(file: string): Map<string, MemberKind> {
  const members = new Map<string, MemberKind>();
  if (!existsSync(file)) return members;
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as unknown;
    if (typeof parsed !== "object" || parsed === null) return members;
    for (const [name, kind] of Object.entries(parsed)) {
      if (kind === "voter" || kind === "learner") members.set(name, kind);
    }
  } catch {
    // A damaged record only loses what it remembered: status sees afresh.
  }
  return members;
}

/** Keeps what was seen, when it changes what is kept; nothing when the state dir does not exist. */
export function rememberMembers(file: string, seen: ReadonlyMap<string, MemberKind>): void {
  const kept = recallMembers(file);
  const merged = new Map([...kept, ...seen]);
  if (merged.size === kept.size && [...seen].every(([name, kind]) => kept.get(name) === kind)) return;
  if (!existsSync(dirname(file))) return;
  // Named for this process: `status` and a foreground `up`'s dashboard may both write at once.
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(Object.fromEntries(merged))}\n`);
  renameSync(temp, file);
}
