import { expect, it } from "vitest";
import { runSeed } from "./simulator.js";

// After the heal the network still reorders. Replication is go-back-N: a follower takes the appends
// that arrive in order and refuses the rest, and the leader resends its window from the gap.

it("seed 97500441: late refusals after the heal do not restart replication from far behind", () => {
  // Refusals of appends sent before the follower caught up arrive after its acknowledgements. Each
  // was taken for a wiped follower and sent the leader back to replicating from far behind.
  expect(runSeed(97500441, { steps: 10_000 }).violation?.message).toBeUndefined();
});

it("seed 97802845: a follower catching up a long log through a shuffled pipeline converges", () => {
  // About one entry per round trip for the 160 entries of the leader's log: more steps than the
  // 10,000 the convergence phase used to allow, whatever the length of the faulty phase.
  expect(runSeed(97802845, { steps: 10_000 }).violation?.message).toBeUndefined();
});
