import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * The unit and sim files spend much of their time waiting on the processes, fsyncs and timers they
 * start, so they run one file per core, where vitest's default leaves one core free (one worker on two
 * cores). The RF3 suite keeps the default: its clusters check timing (elections, leader changes) that
 * a second cluster beside them would disturb.
 */
const WAITING_FILE_WORKERS = availableParallelism();

/**
 * More files to leave out, comma-separated globs (`KEYLOAD_TEST_EXCLUDE`): vitest's own `--exclude` does
 * not reach projects that set `exclude`. The Node 24 leg leaves the AppHost's CLI tests out with it.
 */
const extraExcludes = (process.env.KEYLOAD_TEST_EXCLUDE ?? "")
  .split(",")
  .map((glob) => glob.trim())
  .filter((glob) => glob !== "");

// Workspace packages resolve to their TypeScript sources (the `source` export condition), so tests
// never need a build first.
const sourceFirst = { conditions: ["source", "import", "node", "default"] };

export default defineConfig({
  resolve: sourceFirst,
  ssr: { resolve: { conditions: sourceFirst.conditions, externalConditions: ["source"] } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: [
            "client/src/**/*.test.ts",
            "contract/src/**/*.test.ts",
            "node/src/**/*.test.ts",
            "scripts/**/*.test.ts",
            // The AppHost's own CLI, run as its users run it.
            "apphost/src/**/*.test.ts",
          ],
          exclude: ["node/src/sim/**", "client/src/publish/**", "**/node_modules/**", ...extraExcludes],
          environment: "node",
          // Workers started from the sources run transpiled, as voters and crash children do.
          globalSetup: ["node/src/build/test-fixtures/transpile-global-setup.ts"],
          setupFiles: ["node/src/state/test-fixtures/transpiled-workers.ts"],
          // The AppHost's CLI tests start voters.
          testTimeout: 60_000,
          maxWorkers: WAITING_FILE_WORKERS,
          sequence: { groupOrder: 0 },
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "sim",
          include: ["node/src/sim/**/*.test.ts"],
          exclude: ["**/node_modules/**", ...extraExcludes],
          environment: "node",
          maxWorkers: WAITING_FILE_WORKERS,
          sequence: { groupOrder: 0 },
          testTimeout: 600_000,
          // A file may run its seeds once for all its tests, in beforeAll: as long as a test.
          hookTimeout: 600_000,
        },
      },
      {
        extends: true,
        test: {
          // The RF3 suite: real three-voter clusters through the AppHost's testing API and the client.
          name: "rf3",
          // After the unit and sim files: vitest runs projects with different worker counts as groups.
          sequence: { groupOrder: 1 },
          include: ["tests-rf3/src/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          // `pnpm pack` of the published packages: their prepack empties `dist` and builds it again,
          // the `dist` every voter, AppHost command and crash child runs (@keyload/node/build), so
          // these run alone, after everything else.
          name: "packaging",
          sequence: { groupOrder: 2 },
          include: ["client/src/publish/**/*.test.ts"],
          exclude: ["**/node_modules/**", ...extraExcludes],
          environment: "node",
          maxWorkers: 1,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
