import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { VoterName } from "@keyload/apphost/testing";
import { type Browser, chromium, type Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { SteadyWriteLoad } from "./test-fixtures/steady-write-load.js";

/** Debian's chromium, which .ci/run installs as root; there (KEYLOAD_REQUIRE_BROWSER=1) its absence fails. */
const CHROMIUM = "/usr/bin/chromium";
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Where the screenshot goes; `KEYLOAD_DASHBOARD_SCREENSHOT=docs/images/dashboard.png` renews the README's. */
const SCREENSHOT = resolve(
  REPO_ROOT,
  process.env.KEYLOAD_DASHBOARD_SCREENSHOT ?? "tests-rf3/test-output/dashboard.png",
);

const startCluster = clusterPerTest();

/** Every voter's reading of one gauge, as the page shows it. */
async function gaugeReadings(page: Page, measure: string): Promise<number[]> {
  const gauges = await page.locator(`[data-gauge$=":${measure}"]`).all();
  const values = await Promise.all(gauges.map((gauge) => gauge.getAttribute("data-used")));
  return values.filter((v): v is string => v !== null && v !== "").map(Number);
}

/** The most any voter's data lane or HTTP data pool shows in use. */
async function busiest(page: Page): Promise<number> {
  const readings = await Promise.all(
    ["dataCommands", "dataRequests"].map((measure) => gaugeReadings(page, measure)),
  );
  return Math.max(0, ...readings.flat());
}

function stateCell(page: Page, voter: string) {
  return page.locator(`tr[data-voter="${voter}"] td[data-field="state"]`);
}

/** Clicks a voter's action, checks the confirmation asks first, and confirms it. */
async function confirmAction(page: Page, voter: string, action: string): Promise<void> {
  await page.locator(`tr[data-voter="${voter}"] button[data-action="${action}"]`).click();
  const dialog = page.locator("dialog#confirm");
  await expect.poll(() => dialog.isVisible()).toBe(true);
  expect(await page.locator("#confirm-text").textContent()).toContain(voter);
  await page.locator("#confirm-button").click();
}

describe("dashboard", () => {
  it("shows three voters and their leader live, its gauges move under load, and it pauses a voter and moves leadership", async (context) => {
    if (!existsSync(CHROMIUM)) {
      const reason = `${CHROMIUM} is missing (apt-get install chromium)`;
      if (process.env.KEYLOAD_REQUIRE_BROWSER === "1")
        throw new Error(`KEYLOAD_REQUIRE_BROWSER=1, but ${reason}`);
      context.skip(reason);
    }
    // A small data pool, so the load fills it and the gauge shows it at any reading.
    const cluster = await startCluster({ env: { KeyLoad__HttpAdmission__MaxRequests: "8" } });
    const dashboard = await cluster.dashboard();
    const leader = (await cluster.waitForLeader()).name;
    const follower = cluster.voters.find((v) => v.name !== leader)!.name as VoterName;
    const tenant = await cluster.createTenant();

    let browser: Browser | undefined;
    let load: SteadyWriteLoad | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
      const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
      await page.goto(dashboard.url);

      // Three voters, one of them the leader the cluster has, the others following.
      await expect.poll(() => page.locator("table.resources tbody tr").count(), { timeout: 15_000 }).toBe(3);
      await expect
        .poll(() => page.locator('td[data-field="role"]').allTextContents(), { timeout: 15_000 })
        .toEqual(cluster.voters.map((v) => (v.name === leader ? "leader" : "follower")));
      expect(await page.locator('td[data-field="state"]').allTextContents()).toEqual([
        "running",
        "running",
        "running",
      ]);

      // The console: every voter's lines, pino's fields as columns, searchable.
      const search = page.locator('input[type="search"]');
      await search.fill("voter started");
      // Both at once: before the filter applies, the unfiltered lines name every voter too.
      await expect
        .poll(async () => ({
          voters: new Set(await page.locator("table.logs td.voter").allTextContents()),
          messages: new Set(await page.locator("table.logs td.msg").allTextContents()),
        }))
        .toEqual({
          voters: new Set(cluster.voters.map((v) => v.name)),
          messages: new Set(["voter started"]),
        });
      await search.fill("");

      // Load: the gauges show more than they did idle.
      const idle = await busiest(page);
      load = new SteadyWriteLoad(
        Array.from({ length: 24 }, () => cluster.client(tenant.apiKey, { maxAttempts: 1 })),
        "dashboard",
      );
      await expect.poll(() => busiest(page), { timeout: 20_000, interval: 200 }).toBeGreaterThan(idle);
      mkdirSync(dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      await load.stop();
      load = undefined;

      // A pause from the page, confirmed, freezes that voter's process, and the page says so.
      await confirmAction(page, follower, "pause");
      await expect.poll(() => stateCell(page, follower).textContent(), { timeout: 15_000 }).toBe("paused");
      expect(cluster.voter(follower).state).toBe("paused");
      await confirmAction(page, follower, "resume");
      await expect.poll(() => stateCell(page, follower).textContent(), { timeout: 15_000 }).toBe("running");

      // Leadership handed to the other follower from the page.
      const other = cluster.voters.find((v) => v.name !== leader && v.name !== follower)!.name;
      await confirmAction(page, other, "transfer-leader");
      await expect
        .poll(() => page.locator(`tr[data-voter="${other}"] td[data-field="role"]`).textContent(), {
          timeout: 20_000,
        })
        .toBe("leader");
      expect((await cluster.waitForLeader()).name).toBe(other);
    } finally {
      await load?.stop().catch(() => {});
      await browser?.close();
      // Its admission readings would otherwise overlap the idle check after the test.
      await dashboard.close();
    }
  });
});
