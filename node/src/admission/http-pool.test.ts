import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AdmissionRefusal } from "./admission-refusal.js";
import { type HttpAdmissionOptions, resolveHttpAdmissionOptions } from "./http-admission-options.js";
import { HttpPool } from "./http-pool.js";
import { HttpReservation } from "./http-reservation.js";
import { RETRY_AFTER_ADVICE_DEFAULTS, RetryAfterAdvice } from "./retry-after-advice.js";
import { admitted, waiting } from "./test-fixtures/slot-outcomes.js";

const MiB = 1024 * 1024;
const WAIT_MS = 250;

function pool(lane: "data" | "control", options: HttpAdmissionOptions): HttpPool {
  return new HttpPool(
    lane,
    resolveHttpAdmissionOptions(options),
    new RetryAfterAdvice(RETRY_AFTER_ADVICE_DEFAULTS, () => Date.now()),
  );
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("an HTTP pool and a request it could never fit", () => {
  it("refuses it at once on an idle pool instead of queueing it, and admits the next request", () => {
    // A heavy read reserves 64 MiB + 4096 with an empty body: more than the whole pool.
    const data = pool("data", { MaxModeledBytes: 64 * MiB });
    const refused = data.reserveOrWait("heavy", 0, undefined, WAIT_MS);
    expect(refused).toBeInstanceOf(AdmissionRefusal);
    expect(refused).toMatchObject({
      reason: "HttpBytes",
      lane: "data",
      limit: "MaxModeledBytes",
      limitValue: 64 * MiB,
      requested: 64 * MiB + 4096,
      inUse: 0,
    });
    expect(data.waiting).toBe(0);
    admitted(data.reserveOrWait("data", 0, undefined, WAIT_MS)).dispose();
  });

  it("refuses it at once on a full pool, for its bytes rather than the slots, and holds no one up", async () => {
    const data = pool("data", { MaxRequests: 1, MaxModeledBytes: 32 * MiB });
    const holder = admitted(data.reserveOrWait("data", 0, undefined, WAIT_MS));
    expect(data.reserveOrWait("heavy", 0, undefined, WAIT_MS)).toMatchObject({
      reason: "HttpBytes",
      limit: "MaxModeledBytes",
    });
    expect(data.reserve("heavy", 0, undefined)).toMatchObject({ reason: "HttpBytes" });
    expect(data.waiting).toBe(0);
    // A request that does fit still waits for the slot, and gets it once freed.
    const wait = waiting(data.reserveOrWait("data", 0, undefined, WAIT_MS));
    holder.dispose();
    await vi.advanceTimersByTimeAsync(0);
    const next = await wait.outcome;
    expect(next).toBeInstanceOf(HttpReservation);
    (next as HttpReservation).dispose();
    expect(data.usage()).toEqual({ requests: 0, modeledBytes: 0 });
  });

  it("measures what never fits by the admitted body: a chunked body reserves the whole route cap", () => {
    const data = pool("data", { MaxModeledBytes: 16 * MiB });
    // 8 MiB of working space + 4 × the 8 MiB cap + 4096.
    expect(data.reserveOrWait("data", undefined, undefined, WAIT_MS)).toMatchObject({
      reason: "HttpBytes",
      requested: 40 * MiB + 4096,
    });
    expect(data.waiting).toBe(0);
    admitted(data.reserveOrWait("data", MiB, undefined, WAIT_MS)).dispose();

    const control = pool("control", { ControlMaxModeledBytes: 4096 });
    expect(control.reserveOrWait("control", 1, undefined, WAIT_MS)).toMatchObject({
      reason: "HttpBytes",
      lane: "control",
      limit: "ControlMaxModeledBytes",
    });
    expect(control.waiting).toBe(0);
    admitted(control.reserveOrWait("control", 0, undefined, WAIT_MS)).dispose();
  });
});
