import { bootstrapAdminCommand } from "../state/bootstrap-admin-command.js";
import type { StateMachine } from "../state/state-machine.js";
import { TermProposer, type TermProposerOptions } from "./term-proposer.js";

export interface BootstrapAdminOptions extends TermProposerOptions {
  readonly stateMachine: Pick<StateMachine, "applied" | "hasBootstrapAdmin">;
  /** SHA-256 (lowercase hex) of this voter's configured `KeyLoad__Bootstrap__AdminKey`. */
  readonly adminKeyHash: string;
}

/**
 * Creates a new cluster's bootstrap admin through the log. The admin is not seeded from each voter's
 * configuration, which may differ between voters and would make their states differ: the leader
 * proposes `system.bootstrapAdmin` with its own configured key's hash, and the first one committed
 * wins on every voter (see Principals.bootstrapAdmin). It is proposed as TermProposer proposes, and
 * every voter stops looking once its applied state holds the admin, which is never removed. A
 * duplicate is another leader's proposal of the same command, committed first; a refusal, a key that
 * already holds its hash.
 */
export class BootstrapAdminProposer extends TermProposer {
  constructor(options: BootstrapAdminOptions) {
    const { stateMachine, adminKeyHash } = options;
    super(options, {
      what: "bootstrap admin",
      wanted: () => !stateMachine.hasBootstrapAdmin(),
      finished: () => stateMachine.hasBootstrapAdmin(),
      command: (_term, stamps) => bootstrapAdminCommand(adminKeyHash, stamps),
      committed: ({ duplicate, outcome }) => ({
        duplicate,
        result: outcome.status === "committed" ? outcome.result : null,
      }),
    });
  }
}
