/** Runs every benchmark of this folder in turn and prints their figures. */
import { formatCommandAdmissionBench, runCommandAdmissionBench } from "./admission-command.js";
import { formatHttpAdmissionBench, runHttpAdmissionBench } from "./admission-http.js";
import { formatChecksumBench, runChecksumBench } from "./entry-checksum.js";
import { formatLogAppendBench, runLogAppendBench } from "./log-append.js";
import { formatRaftBench, runRaftBench } from "./raft-core.js";
import { formatStateApplyBench, runStateApplyBench } from "./state-apply.js";

runRaftBench(50_000, 64, 1024);
console.log(formatRaftBench(runRaftBench(1_000_000, 64, 1024)));

await runCommandAdmissionBench(200_000, 50_000);
console.log(formatCommandAdmissionBench(await runCommandAdmissionBench(5_000_000, 1_000_000)));

runHttpAdmissionBench(200_000);
console.log(formatHttpAdmissionBench(runHttpAdmissionBench(5_000_000)));

console.log(formatChecksumBench(runChecksumBench([64, 1024, 65536], 1)));

console.log(formatLogAppendBench(await runLogAppendBench(3, 1024)));

await runStateApplyBench(20_000, 64, 1024, true);
for (const searched of [true, false]) {
  console.log(formatStateApplyBench(await runStateApplyBench(200_000, 64, 1024, searched)));
}
