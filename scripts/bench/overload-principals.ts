/**
 * Benchmark principals, created through the admin API with the bootstrap admin key, each a writer with
 * one API key: any list of them (`createWriters`), or the flood's, `flood-p{i}` in tenant
 * `flood-t{i mod tenants}`, and the control principal, `control` alone in tenant `ops`.
 */
// @keyload/scripts does not depend on @keyload/client; its source is imported directly.
import { KeyLoadClient } from "@keyload/client";

export interface BenchPrincipal {
  readonly principalId: string;
  readonly tenantId: string;
}

export interface BenchPrincipals {
  /** One API key per flooding principal, in principal order. */
  readonly floodKeys: readonly string[];
  readonly controlKey: string;
}

/** Creates each principal as a writer with one API key, and returns the keys in the same order. */
export async function createWriters(
  endpoints: readonly string[],
  adminKey: string,
  principals: readonly BenchPrincipal[],
): Promise<string[]> {
  const admin = new KeyLoadClient({ endpoints, apiKey: adminKey });
  try {
    const make = async ({ principalId, tenantId }: BenchPrincipal): Promise<string> => {
      await admin.putPrincipal({ principalId, tenantId, roles: ["writer"] });
      const { apiKey } = await admin.createKey(principalId);
      // Absent only when a lost answer made the client retry; a bench on a healthy cluster stops there.
      if (apiKey === undefined) throw new Error(`the key made for ${principalId} came back without its text`);
      return apiKey;
    };
    // A few at a time: these are data-lane writes of one admin principal, whose budget is small.
    const keys: string[] = [];
    for (let i = 0; i < principals.length; i += 4) {
      keys.push(...(await Promise.all(principals.slice(i, i + 4).map(make))));
    }
    return keys;
  } finally {
    await admin.close();
  }
}

export async function createPrincipals(
  endpoints: readonly string[],
  adminKey: string,
  principals: number,
  tenants: number,
): Promise<BenchPrincipals> {
  const flood = Array.from({ length: principals }, (_, p) => ({
    principalId: `flood-p${p}`,
    tenantId: `flood-t${p % tenants}`,
  }));
  const keys = await createWriters(endpoints, adminKey, [
    ...flood,
    { principalId: "control", tenantId: "ops" },
  ]);
  return { floodKeys: keys.slice(0, principals), controlKey: keys[principals]! };
}
