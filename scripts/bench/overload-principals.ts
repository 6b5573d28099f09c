/**
 * The flood's principals and the control principal, created through the admin API with the bootstrap
 * admin key: `flood-p{i}` in tenant `flood-t{i mod tenants}`, and `control` alone in tenant `ops`, each
 * a writer with one API key.
 */
// @keyload/scripts does not depend on @keyload/client; its source is imported directly.
import { KeyLoadClient } from "@keyload/client";

export interface BenchPrincipals {
  /** One API key per flooding principal, in principal order. */
  readonly floodKeys: readonly string[];
  readonly controlKey: string;
}

export async function createPrincipals(
  endpoints: readonly string[],
  adminKey: string,
  principals: number,
  tenants: number,
): Promise<BenchPrincipals> {
  const admin = new KeyLoadClient({ endpoints, apiKey: adminKey });
  try {
    const make = async (principalId: string, tenantId: string): Promise<string> => {
      await admin.putPrincipal({ principalId, tenantId, roles: ["writer"] });
      return (await admin.createKey(principalId)).apiKey;
    };
    // A few at a time: these are data-lane writes of one admin principal, whose budget is small.
    const floodKeys: string[] = [];
    for (let i = 0; i < principals; i += 4) {
      const batch = Array.from({ length: Math.min(4, principals - i) }, (_, j) => i + j);
      floodKeys.push(...(await Promise.all(batch.map((p) => make(`flood-p${p}`, `flood-t${p % tenants}`)))));
    }
    const controlKey = await make("control", "ops");
    return { floodKeys, controlKey };
  } finally {
    await admin.close();
  }
}
