import { Type } from "@sinclair/typebox";
import { anyObject, type Wire } from "./json-schema.js";

/** What the operations routes answer: health, metrics and the API document; no key, no admission pool. */

/** `GET /health/live` and `/health/ready`. */
export const HealthSchema = Type.Object({
  live: Type.Boolean(),
  ready: Type.Boolean(),
  /** Role, term, indexes, why not ready: shown as the voter reports it. */
  detail: anyObject(),
});
export type Health = Wire<typeof HealthSchema>;

/** `GET /metrics`: Prometheus' text format. */
export const MetricsSchema = Type.String();

/** `GET /openapi.json`: this API as an OpenAPI 3.1 document. */
export const ApiDocumentSchema = anyObject();
export type ApiDocument = Wire<typeof ApiDocumentSchema>;
