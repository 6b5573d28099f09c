import type { CommandOutcome } from "./command-outcomes.js";

/**
 * What applying one entry produced, for the voter waiting on it:
 * - `command`: the command's outcome. For a first application `outcome.index` is this entry; for a
 *   duplicate (`duplicate: true`) it is the entry that applied the command first, and nothing was
 *   applied again. A voter that generated material for the command (an API key) reveals it only when
 *   `outcome.index` is the entry it proposed. `tenant`/`commandId` are null when the envelope was too
 *   malformed to name them; such an outcome, like a CommandIdConflict or the refusal of a caller who may
 *   no longer send a command whose ID already has an outcome, is not stored under any ID.
 * - `noop`: a leader's empty entry; only the applied index moved.
 * - `skipped`: at or below the applied index already (a replay after a crash); nothing happened.
 */
export type ApplyResult =
  | {
      readonly type: "command";
      readonly entryIndex: number;
      readonly tenant: string | null;
      readonly commandId: string | null;
      readonly duplicate: boolean;
      readonly outcome: CommandOutcome;
    }
  | { readonly type: "noop"; readonly entryIndex: number }
  | { readonly type: "skipped"; readonly entryIndex: number };
