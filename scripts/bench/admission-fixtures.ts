/** What both admission benchmarks share: the scopes they spread load over and how they time it. */

export const TENANTS = 1000;
export const PRINCIPALS_PER_TENANT = 10;

export interface Scope {
  readonly tenantId: string;
  readonly principalId: string;
}

export function scopes(): Scope[] {
  const all: Scope[] = [];
  for (let t = 0; t < TENANTS; t++)
    for (let p = 0; p < PRINCIPALS_PER_TENANT; p++)
      all.push({ tenantId: `tenant-${t}`, principalId: `principal-${t}-${p}` });
  return all;
}

/** A fixed pseudo-random order of 65,536 scope indexes, so every run touches scopes the same way. */
export function visitOrder(modulo: number): Uint32Array {
  const order = new Uint32Array(1 << 16);
  let x = 0x9e3779b9;
  for (let i = 0; i < order.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    order[i] = (x >>> 0) % modulo;
  }
  return order;
}

/** Nanoseconds per operation, by process CPU time (steady on a shared machine) and by wall time. */
export interface PerOperation {
  readonly cpuNs: number;
  readonly wallNs: number;
}

export function stopwatch(): (operations: number) => PerOperation {
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  return (operations) => {
    const wallNs = Number(process.hrtime.bigint() - wall0);
    const cpu = process.cpuUsage(cpu0);
    return { cpuNs: ((cpu.user + cpu.system) * 1000) / operations, wallNs: wallNs / operations };
  };
}

/** Keeps results reachable, so the optimizer cannot drop objects a real caller would use. */
export const sink: unknown[] = new Array(64);
