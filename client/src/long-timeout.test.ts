import { describe, expect, it } from "vitest";
import { MAX_TIMER_MS, setLongTimeout } from "./long-timeout.js";

function after(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe("setLongTimeout", () => {
  it("fires once the whole delay has passed, step after step", async () => {
    let firedAt: number | undefined;
    const started = performance.now();
    setLongTimeout(() => (firedAt = performance.now() - started), 45, { stepMs: 10 });
    await after(25);
    expect(firedAt).toBeUndefined();
    await after(60);
    expect(firedAt).toBeGreaterThanOrEqual(40);
  });

  it("never fires once cleared, between steps too, nor for an infinite delay", async () => {
    let fired = 0;
    const cleared = setLongTimeout(() => fired++, 30, { stepMs: 10 });
    await after(15);
    cleared.clear();
    const endless = setLongTimeout(() => fired++, Number.POSITIVE_INFINITY, { stepMs: 10 });
    await after(50);
    endless.clear();
    expect(fired).toBe(0);
  });

  it("takes a delay past what one timer holds without a TimeoutOverflowWarning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    let fired = false;
    try {
      const timeout = setLongTimeout(() => (fired = true), MAX_TIMER_MS + 1, { unref: true });
      await after(20);
      timeout.clear();
    } finally {
      process.off("warning", onWarning);
    }
    expect([fired, warnings]).toEqual([false, []]);
  });
});
