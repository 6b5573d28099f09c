// Resolves the workspace packages to their TypeScript sources (the "source" export condition), as
// `--conditions=source` does for the voters, which a bin cannot pass to its own process.
export async function resolve(specifier, context, nextResolve) {
  const conditions = context.conditions.includes("source")
    ? context.conditions
    : ["source", ...context.conditions];
  return nextResolve(specifier, { ...context, conditions });
}
