/**
 * The process the AppHost starts for each voter: it ties the voter's life to its AppHost (see
 * supervision.ts), then runs the voter's own entry point, `keyload-node`, in this process.
 */
import { VOTER_ENTRY } from "./repo-layout.js";
import { watchSupervisor } from "./supervision.js";

watchSupervisor(process.env);
// keyload-node reads its arguments as configuration; the launcher passes none.
process.argv.splice(2);
await import(VOTER_ENTRY.href);
