import { describe, expect, it } from "vitest";
import { ROUTE_LANES } from "./route-lanes.js";
import { ROUTE_PATHS } from "./route-paths.js";

describe("ROUTE_LANES", () => {
  it("names the lane of every route, as the contract's table (section 4) does", () => {
    expect(Object.keys(ROUTE_LANES).sort()).toEqual(Object.keys(ROUTE_PATHS).sort());
    const control = Object.entries(ROUTE_LANES)
      .filter(([, lane]) => lane === "control")
      .map(([kind]) => kind)
      .sort();
    expect(control).toEqual(
      [
        "queue.lease",
        "queue.ack",
        "queue.nack",
        "queue.renew",
        "subscription.deliver",
        "subscription.ack",
        "membership.put",
        "membership.list",
        "dispatch.append",
        "dispatch.read",
        // The Raft configuration's administration: replacing a voter must not wait behind data.
        "cluster.members",
        "cluster.addLearner",
        "cluster.promote",
        "cluster.remove",
        "cluster.transferLeader",
      ].sort(),
    );
    for (const kind of ["health.live", "health.ready", "metrics", "openapi"] as const) {
      expect(ROUTE_LANES[kind], kind).toBeNull();
    }
    expect(ROUTE_LANES["catalog.put"]).toBe("data");
    expect(ROUTE_LANES.query).toBe("data");
  });
});
