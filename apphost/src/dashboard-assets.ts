import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { DashboardAssetsError } from "./apphost-errors.js";

/** Where vite writes the built page (apphost/dashboard/vite.config.ts), from src and from a build alike. */
export const DASHBOARD_ASSETS_DIR = fileURLToPath(new URL("../dashboard/dist/", import.meta.url));

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
};

export interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/**
 * The built page, every file read once into memory by its URL path (`/index.html`, `/assets/...`). A
 * request can only ever get one of these, so no path from a URL touches the file system.
 */
export function loadAssets(dir: string = DASHBOARD_ASSETS_DIR): ReadonlyMap<string, Asset> {
  if (!existsSync(join(dir, "index.html"))) {
    throw new DashboardAssetsError(
      `the dashboard is not built (no ${join(dir, "index.html")}): run \`pnpm run setup\` or \`pnpm --filter @keyload/apphost build:dashboard\``,
    );
  }
  return new Map(
    filesUnder(dir).map((file) => [
      `/${relative(dir, file).split(sep).join("/")}`,
      {
        body: readFileSync(file),
        contentType: CONTENT_TYPES[extname(file)] ?? "application/octet-stream",
      },
    ]),
  );
}
