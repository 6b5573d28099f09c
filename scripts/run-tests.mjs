#!/usr/bin/env node
// Runs every vitest project (or those named by --project) and ends with one line
// `N passed, N failed` summing every suite, which CI reads. Exits with vitest's status.
// `--rf3-containers` runs the RF3 suite's container subset instead (rf3-container-subset.mjs).
import { CONTAINER_SUBSET_ARGS, CONTAINER_SUBSET_ENV } from "./rf3-container-subset.mjs";
import { printSummary, runVitest } from "./vitest-summary.mjs";

const args = process.argv.slice(2);
const containers = args.includes("--rf3-containers");
const tests = containers
  ? runVitest(
      [...CONTAINER_SUBSET_ARGS, ...args.filter((a) => a !== "--rf3-containers")],
      CONTAINER_SUBSET_ENV,
    )
  : runVitest(args);
printSummary(tests);
process.exit(tests.status);
