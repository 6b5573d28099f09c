#!/usr/bin/env node
// Runs every vitest project (or those named by --project) and ends with one line
// `N passed, N failed` summing every suite, which CI reads. Exits with vitest's status.
import { runVitest } from "./vitest-summary.mjs";

const { status, passed, failed } = runVitest(process.argv.slice(2));
console.log(`${passed} passed, ${failed} failed`);
process.exit(status);
