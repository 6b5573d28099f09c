import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["node/src/**/*.test.ts", "scripts/**/*.test.ts"],
          exclude: ["node/src/sim/**", "**/node_modules/**"],
          environment: "node",
        },
      },
      {
        test: {
          name: "sim",
          include: ["node/src/sim/**/*.test.ts"],
          environment: "node",
          testTimeout: 600_000,
        },
      },
    ],
  },
});
