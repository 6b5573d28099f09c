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
          ],
          exclude: ["node/src/sim/**", "**/node_modules/**"],
          environment: "node",
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
          // Real voter processes on loopback: each file starts its own isolated clusters.
          name: "apphost",
          include: ["apphost/src/**/*.test.ts"],
          environment: "node",
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
