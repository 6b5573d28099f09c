import { defineConfig } from "vitest/config";

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
          exclude: ["node/src/sim/**", "**/node_modules/**"],
          environment: "node",
          // The AppHost's CLI tests start voters.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "sim",
          include: ["node/src/sim/**/*.test.ts"],
          environment: "node",
          testTimeout: 600_000,
        },
      },
      {
        extends: true,
        test: {
          // The RF3 suite: real three-voter clusters through the AppHost's testing API and the client.
          name: "rf3",
          include: ["tests-rf3/src/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
