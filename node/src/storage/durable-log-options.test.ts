import { describe, expect, it } from "vitest";
import { DEFAULT_STORAGE_LIMITS, type SqliteLimits } from "../fs/sqlite-limits.js";
import { checkInteger, type DurableLogStoreOptions, resolveOptions } from "./durable-log-options.js";
import { StorageArgumentError } from "./storage-errors.js";
import { CONF } from "./test-fixtures/storage-fixture.js";

const MiB = 1024 * 1024;
const LIMITS = DEFAULT_STORAGE_LIMITS.log;
const resolve = (o: Partial<DurableLogStoreOptions>, sqlite: SqliteLimits = LIMITS) =>
  resolveOptions({ conf: CONF, ...o }, sqlite);

describe("resolveOptions", () => {
  it("fills in the defaults", () => {
    expect(resolve({})).toEqual({
      cacheEntries: 8192,
      cacheBytes: 32 * MiB,
      checkpointBytes: Math.min(8 * MiB, LIMITS.walLimitBytes / 2),
      gcStepEntries: 256,
      gcStepIntervalMs: 10,
      journalBytes: 32 * MiB,
      absorbIntervalMs: 20,
      fsync: "event-loop",
      faultHook: undefined,
    });
  });

  it("keeps the values given", () => {
    const faultHook = (): void => undefined;
    const given = {
      cacheEntries: 5,
      cacheBytes: 6,
      checkpointBytes: 7,
      gcStepEntries: 8,
      gcStepIntervalMs: 0,
      journalBytes: 0,
      absorbIntervalMs: 0,
      fsync: "thread-pool" as const,
      faultHook,
    };
    expect(resolve(given)).toEqual(given);
  });

  it("caps checkpointBytes at half the WAL's limit, and at least 1", () => {
    const wal = (walLimitBytes: number): SqliteLimits => ({ ...LIMITS, walLimitBytes });
    expect(resolve({ checkpointBytes: 10 * MiB }, wal(4 * MiB)).checkpointBytes).toBe(2 * MiB);
    expect(resolve({ checkpointBytes: MiB }, wal(4 * MiB)).checkpointBytes).toBe(MiB);
    expect(resolve({ checkpointBytes: 100 }, wal(1)).checkpointBytes).toBe(1);
  });

  const positive = ["cacheEntries", "cacheBytes", "checkpointBytes", "gcStepEntries"] as const;
  const nonNegative = ["gcStepIntervalMs", "journalBytes", "absorbIntervalMs"] as const;

  it.each(positive)("rejects a %s that is not a positive integer", (name) => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(() => resolve({ [name]: bad })).toThrow(StorageArgumentError);
      expect(() => resolve({ [name]: bad })).toThrow(`${name} must be a positive integer, got ${bad}`);
    }
    expect(resolve({ [name]: 1 })[name]).toBe(1);
  });

  it.each(nonNegative)("rejects a %s that is not a non-negative integer", (name) => {
    for (const bad of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => resolve({ [name]: bad })).toThrow(StorageArgumentError);
      expect(() => resolve({ [name]: bad })).toThrow(`${name} must be a non-negative integer, got ${bad}`);
    }
    expect(resolve({ [name]: 0 })[name]).toBe(0);
  });

  it("reports checkpointBytes before the other fields", () => {
    expect(() => resolve({ cacheEntries: 0, checkpointBytes: 0 })).toThrow(/^checkpointBytes/);
  });
});

describe("checkInteger", () => {
  it("accepts safe integers, negative ones too, and rejects the rest", () => {
    expect(() => checkInteger("lo", -3)).not.toThrow();
    expect(() => checkInteger("lo", 0)).not.toThrow();
    for (const bad of [0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(() => checkInteger("lo", bad)).toThrow(StorageArgumentError);
      expect(() => checkInteger("lo", bad)).toThrow(`lo must be an integer, got ${bad}`);
    }
  });
});
