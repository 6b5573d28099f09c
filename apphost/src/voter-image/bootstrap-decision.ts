import { existsSync } from "node:fs";
import { join } from "node:path";
import type { BootstrapRecord } from "./bootstrap-record.js";

export interface BootstrapInputs {
  readonly record: BootstrapRecord;
  readonly voter: string;
  readonly dataDir: string;
  /** Throws when the voter would refuse its configuration with this bootstrap ID. */
  readonly validate: (bootstrapId: string) => void;
  readonly log: (line: string) => void;
}

/**
 * Whether this start should bootstrap the cluster (its ID) or not (null), as the AppHost decides for
 * its voters (cluster-bootstrap.ts): only a voter's first start does. A voter that has started before
 * and finds its storage empty has lost it: it joins as a new member, which the operator adds
 * (docs/publish.md), and never votes with what it no longer holds.
 *
 * The voter is recorded as started before it starts, as the AppHost does: a start that then fails
 * costs that voter its bootstrap (it must be added), never safety. The configuration is checked first,
 * so that the commonest failed start, a bad setting, costs nothing.
 */
export async function bootstrapIdFor(inputs: BootstrapInputs): Promise<string | null> {
  const { record, voter, dataDir, log } = inputs;
  // Member identity written: the voter holds data and ignores any bootstrap ID. Its start must not wait
  // on the record (the API server may be away), which it only catches up with.
  if (existsSync(join(dataDir, "raft", "member.json"))) {
    void record
      .read(voter)
      .then((state) => (state.started ? undefined : record.markStarted(voter)))
      .catch((err: unknown) => log(`could not bring ${record.description} up to date: ${String(err)}`));
    return null;
  }
  const { clusterId, started } = await record.read(voter);
  if (started) {
    log(
      `${voter} has started before (${record.description}) and its storage is empty: it joins as a new ` +
        "member, to be added as a learner and promoted (docs/publish.md, Losing a voter's data)",
    );
    return null;
  }
  inputs.validate(clusterId);
  await record.markStarted(voter);
  log(`${voter}'s first start: bootstrapping cluster ${clusterId}`);
  return clusterId;
}
