import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AdmissionRefusal } from "./admission-refusal.js";
import { HttpAdmissionGovernor, type HttpAdmissionRequest } from "./http-admission-governor.js";
import type { SlotWait } from "./http-pool.js";
import { HttpReservation } from "./http-reservation.js";
import { admitted, waiting } from "./test-fixtures/slot-outcomes.js";

const MiB = 1024 * 1024;
const WAIT_MS = 250;
const data: HttpAdmissionRequest = { kind: "data", declaredLength: 0 };
const heavy: HttpAdmissionRequest = { kind: "heavy", declaredLength: 0 };

/** What each wait came to so far, in the order given: a reservation, a refusal's reason, or nothing yet. */
function track(waits: readonly SlotWait[]): (HttpReservation | string | undefined)[] {
  const seen: (HttpReservation | string | undefined)[] = waits.map(() => undefined);
  waits.forEach((wait, i) => {
    void wait.outcome.then((outcome) => {
      seen[i] = outcome instanceof AdmissionRefusal ? outcome.reason : outcome;
    });
  });
  return seen;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("waiting for an HTTP slot", () => {
  it("gives freed slots to the waiting requests in the order they came", async () => {
    const governor = new HttpAdmissionGovernor({ MaxRequests: 1 });
    const holder = admitted(governor.reserveOrWait(data, WAIT_MS));
    const waits = [1, 2, 3].map(() => waiting(governor.reserveOrWait(data, WAIT_MS)));
    const seen = track(waits);
    expect(governor.waiting("data")).toBe(3);

    holder.dispose();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.map((s) => s instanceof HttpReservation)).toEqual([true, false, false]);
    expect(governor.usage("data").requests).toBe(1);
    (seen[0] as HttpReservation).dispose();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.map((s) => s instanceof HttpReservation)).toEqual([true, true, false]);
    expect(governor.waiting("data")).toBe(1);
  });

  it("lets no later request take room the oldest waiter waits for, even room it would fit in", async () => {
    // Room for one heavy read and one data request, or for three data requests.
    const governor = new HttpAdmissionGovernor({ MaxModeledBytes: 80 * MiB });
    const first = admitted(governor.reserveOrWait(heavy, WAIT_MS));
    const heavyWait = waiting(governor.reserveOrWait(heavy, WAIT_MS));
    const dataWait = waiting(governor.reserveOrWait(data, WAIT_MS));
    // Without waiting, it is refused rather than overtaking.
    expect(governor.reserve(data)).toMatchObject({ reason: "HttpBytes" });
    const seen = track([heavyWait, dataWait]);

    first.dispose();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen[0]).toBeInstanceOf(HttpReservation);
    expect(seen[1]).toBeInstanceOf(HttpReservation);
    expect(governor.waiting("data")).toBe(0);
  });

  it("refuses a wait that runs out, then, and gives its turn to those behind it", async () => {
    const governor = new HttpAdmissionGovernor({ MaxModeledBytes: 80 * MiB });
    const holder = admitted(governor.reserveOrWait(heavy, WAIT_MS));
    const heavyWait = waiting(governor.reserveOrWait(heavy, WAIT_MS));
    await vi.advanceTimersByTimeAsync(WAIT_MS / 2);
    const dataWait = waiting(governor.reserveOrWait(data, WAIT_MS));
    const seen = track([heavyWait, dataWait]);

    await vi.advanceTimersByTimeAsync(WAIT_MS / 2 - 1);
    expect(seen).toEqual([undefined, undefined]);
    await vi.advanceTimersByTimeAsync(1);
    // The heavy read's wait ended with no room for it; the data request behind it fits and goes in.
    expect(seen[0]).toBe("HttpBytes");
    expect(seen[1]).toBeInstanceOf(HttpReservation);
    const refusal = await heavyWait.outcome;
    if (!(refusal instanceof AdmissionRefusal)) throw new Error("expected a refusal");
    expect(refusal.toError().retryAfterSeconds).toBe(1);
    expect(governor.waiting("data")).toBe(0);
    holder.dispose();
    (seen[1] as HttpReservation).dispose();
    expect(governor.usage("data")).toEqual({ requests: 0, modeledBytes: 0 });
  });

  it("takes no slot for a cancelled wait and passes its turn on", async () => {
    const governor = new HttpAdmissionGovernor({ MaxRequests: 1 });
    const holder = admitted(governor.reserveOrWait(data, WAIT_MS));
    const gone = waiting(governor.reserveOrWait(data, WAIT_MS));
    const next = waiting(governor.reserveOrWait(data, WAIT_MS));
    const seen = track([gone, next]);

    gone.cancel();
    gone.cancel();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen[0]).toBe("HttpRequests");
    expect(governor.waiting("data")).toBe(1);
    holder.dispose();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen[1]).toBeInstanceOf(HttpReservation);
    expect(governor.usage("data").requests).toBe(1);
    // Its timer was stopped with the wait: nothing changes when it would have run out.
    await vi.advanceTimersByTimeAsync(WAIT_MS);
    expect(seen[0]).toBe("HttpRequests");
    expect(governor.usage("data").requests).toBe(1);
  });

  it("refuses at once with no wait allowed, and keeps the pools apart", () => {
    const governor = new HttpAdmissionGovernor({ MaxRequests: 1, ControlMaxRequests: 1 });
    admitted(governor.reserveOrWait(data, 0));
    expect(governor.reserveOrWait(data, 0)).toMatchObject({ reason: "HttpRequests" });
    expect(governor.waiting("data")).toBe(0);
    waiting(governor.reserveOrWait(data, WAIT_MS));
    admitted(governor.reserveOrWait({ kind: "control" }, WAIT_MS));
    expect(governor.waiting("control")).toBe(0);
  });
});
