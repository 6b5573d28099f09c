import type { Lane, ResourceExhaustedReason } from "@keyload/contract";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { HttpAdmissionGovernor } from "../admission/index.js";
import type { HttpConnections } from "./http-connections.js";

const POOLS: readonly Lane[] = ["data", "control"];
/** Why HTTP admission refuses; counted from zero so a dashboard sees every series before the first one. */
const HTTP_REFUSALS: readonly ResourceExhaustedReason[] = [
  "HttpRequests",
  "HttpBytes",
  "TenantRequests",
  "PrincipalRequests",
  "BodyTooLarge",
];

/**
 * The edge's Prometheus metrics, in the voter's registry beside its Raft and command metrics. Usage is
 * read from the governor at scrape time, so it is exact without being updated per request.
 */
export class HttpMetrics {
  private readonly duration: Histogram<"method" | "route" | "status">;
  private readonly rejections: Counter<"pool" | "reason">;
  private readonly names: string[] = [];

  constructor(
    private readonly registry: Registry,
    governor: HttpAdmissionGovernor,
    connections: HttpConnections,
  ) {
    this.duration = new Histogram({
      name: this.named("keyload_http_request_duration_seconds"),
      help: "Public HTTP requests from the first hook to the response written (or the client gone)",
      labelNames: ["method", "route", "status"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.rejections = new Counter({
      name: this.named("keyload_http_admission_rejections_total"),
      help: "Requests HTTP admission refused, by pool and reason",
      labelNames: ["pool", "reason"],
      registers: [registry],
    });
    for (const pool of POOLS) for (const reason of HTTP_REFUSALS) this.rejections.inc({ pool, reason }, 0);
    this.usageGauge(
      "keyload_http_admission_requests",
      "Requests holding a slot of the pool",
      (pool) => governor.usage(pool).requests,
    );
    this.usageGauge(
      "keyload_http_admission_modeled_bytes",
      "Modeled bytes reserved in the pool",
      (pool) => governor.usage(pool).modeledBytes,
    );
    this.usageGauge(
      "keyload_http_admission_ingress_requests",
      "Requests holding a slot of the pool before their key is verified",
      (pool) => governor.ingress(pool),
    );
    this.usageGauge(
      "keyload_http_admission_waiting_requests",
      "Requests waiting for a slot of the pool, refused if none frees in time",
      (pool) => governor.waiting(pool),
    );
    new Gauge({
      name: this.named("keyload_http_connections"),
      help: "Connections open to the public HTTP port, TLS handshakes in progress included",
      registers: [registry],
      collect() {
        this.set(connections.open);
      },
    });
    new Counter({
      name: this.named("keyload_http_connections_refused_total"),
      help: "Connections to the public HTTP port closed as soon as accepted, over Connections:MaxHttp",
      registers: [registry],
      collect() {
        // The edge keeps the running total; a scrape copies it.
        this.reset();
        this.inc(connections.refused);
      },
    });
  }

  observe(method: string, route: string, status: string, seconds: number): void {
    this.duration.observe({ method, route, status }, seconds);
  }

  rejected(pool: Lane, reason: string): void {
    this.rejections.inc({ pool, reason });
  }

  /** Takes the edge's metrics out of the voter's registry, so a new edge can register them again. */
  unregister(): void {
    for (const name of this.names) this.registry.removeSingleMetric(name);
  }

  private usageGauge(name: string, help: string, read: (pool: Lane) => number): void {
    new Gauge({
      name: this.named(name),
      help,
      labelNames: ["pool"],
      registers: [this.registry],
      collect() {
        for (const pool of POOLS) this.set({ pool }, read(pool));
      },
    });
  }

  private named(name: string): string {
    this.names.push(name);
    return name;
  }
}
