#!/usr/bin/env node
// The AppHost command line, run from its TypeScript sources through tsx like the voters it starts.
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");
