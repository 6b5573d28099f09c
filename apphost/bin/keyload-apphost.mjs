#!/usr/bin/env node
// The AppHost command line, run from its TypeScript sources through tsx like the voters it starts.
import { register as registerHooks } from "node:module";
import { register } from "tsx/esm/api";

// Registered before tsx so that tsx's own resolution runs through it.
registerHooks("./source-condition-hooks.mjs", import.meta.url);
register();
await import("../src/cli.ts");
