/**
 * A benchmark's own arguments. `pnpm bench:x -- --seconds 5` passes the `--` along to the script, where
 * `parseArgs` would take it for the end of the options and refuse what follows as positionals.
 */
export function scriptArgs(argv: readonly string[] = process.argv.slice(2)): string[] {
  return argv[0] === "--" ? argv.slice(1) : [...argv];
}
