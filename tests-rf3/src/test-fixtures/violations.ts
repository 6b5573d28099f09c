/** How a history check reports one thing no correct cluster could have answered. */
export type Report = (violation: string) => void;

/** Stops the list growing without bound when one fault breaks many operations. */
const MAX_VIOLATIONS = 20;

/** Runs `check`, and returns the first violations it reported; empty when there were none. */
export function violationsOf(check: (report: Report) => void): string[] {
  const violations: string[] = [];
  check((violation) => {
    if (violations.length < MAX_VIOLATIONS) violations.push(violation);
  });
  return violations;
}
