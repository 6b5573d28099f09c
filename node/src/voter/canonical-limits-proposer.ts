import { canonicalLimitsCommand } from "../state/canonical-limits-command.js";
import type { StateMachine } from "../state/state-machine.js";
import { TermProposer, type TermProposerOptions } from "./term-proposer.js";

export interface CanonicalLimitsProposerOptions extends TermProposerOptions {
  readonly stateMachine: Pick<
    StateMachine,
    "applied" | "keptLimitsFingerprint" | "configuredLimits" | "limitsFingerprint"
  >;
}

/**
 * Brings the canonical limits the state applies entries under (CanonicalLimitsStore) to this voter's
 * configured ones, through the log: a leader whose configuration differs from what its applied state
 * keeps, or whose state keeps none yet (a new cluster's first leader), proposes `system.canonicalLimits`
 * as TermProposer proposes, and every voter takes the limits at that entry's index. So limits are
 * changed by restarting the voters with new ones: entries committed before apply under the old limits
 * on every voter, whichever restarted when, and a voter that joins later replays the log under the
 * limits of each entry (docs/decisions/0038).
 */
export class CanonicalLimitsProposer extends TermProposer {
  constructor(options: CanonicalLimitsProposerOptions) {
    const { stateMachine } = options;
    super(options, {
      what: "configured canonical limits",
      wanted: () => stateMachine.keptLimitsFingerprint() !== stateMachine.limitsFingerprint,
      command: (term, stamps) => canonicalLimitsCommand(stateMachine.configuredLimits, term, stamps),
    });
  }
}
