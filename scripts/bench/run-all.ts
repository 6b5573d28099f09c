/** Runs every benchmark of this folder in turn and prints their figures. */
import { formatRaftBench, runRaftBench } from "./raft-core.js";

runRaftBench(50_000, 64, 1024);
console.log(formatRaftBench(runRaftBench(1_000_000, 64, 1024)));
