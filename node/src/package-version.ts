import { readFileSync } from "node:fs";

/**
 * The voter's version: the one in this package's package.json, which sits one level above both src/
 * and dist/ (and beside dist/ in the voter image). `--version` prints it; `keyload_build_info` exports it.
 */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}
