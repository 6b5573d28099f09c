// The smoke subset of the RF3 suite that also runs with every voter in a container: election, write
// and read, the data-byte budget, body limits and leader loss. Shared by `pnpm test:rf3:containers`
// and `npm run verify` (which runs it where a Docker engine is required, as in CI).

/** The vitest arguments that select the subset; run with KEYLOAD_RF3_RUNTIME=container. */
export const CONTAINER_SUBSET_ARGS = [
  "--project",
  "rf3",
  "tests-rf3/src/testing-api.test.ts",
  "tests-rf3/src/data-byte-budget.test.ts",
  "tests-rf3/src/body-limits.test.ts",
  "tests-rf3/src/leader-loss.test.ts",
];

export const CONTAINER_SUBSET_ENV = { KEYLOAD_RF3_RUNTIME: "container" };
