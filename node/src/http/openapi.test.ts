import { describe, expect, it } from "vitest";
import { resolveHttpAdmissionOptions } from "../admission/index.js";
import { openApiDocument } from "./openapi.js";
import { ROUTES } from "./routes.js";
import { bearer } from "./test-fixtures/fake-voter-service.js";
import { httpFixture } from "./test-fixtures/http-fixture.js";
import { openApiSchemaProblems } from "./test-fixtures/openapi-schema-validator.js";

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: Record<string, Record<string, unknown>>;
};

const doc = openApiDocument(ROUTES, resolveHttpAdmissionOptions()) as unknown as Doc;

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1 and lists every route of the table", () => {
    expect(doc.openapi).toBe("3.1.0");
    for (const route of ROUTES) {
      const operation = doc.paths[route.path]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.path}`).toBeDefined();
      expect(operation?.operationId).toBe(route.kind);
    }
    const operations = Object.values(doc.paths).flatMap((methods) => Object.keys(methods));
    expect(operations).toHaveLength(ROUTES.length);
  });

  it("documents the error body, the headers and the bearer key", () => {
    expect(doc.components.schemas?.Error).toMatchObject({ required: ["error"] });
    expect(Object.keys(doc.components.headers ?? {})).toEqual(
      expect.arrayContaining(["Retry-After", "KeyLoad-Leader", "KeyLoad-Commit-Index"]),
    );
    expect(doc.components.parameters?.CommandId).toMatchObject({
      name: "KeyLoad-Command-Id",
      in: "header",
      required: true,
    });
    expect(doc.components.securitySchemes?.apiKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.responses?.ResourceExhausted).toMatchObject({
      headers: { "Retry-After": expect.anything() },
    });
    expect(doc.components.responses?.Unavailable).toMatchObject({
      headers: { "KeyLoad-Leader": expect.anything() },
    });
    expect(doc.components.responses?.UnknownWriteOutcome).toMatchObject({
      headers: { "KeyLoad-Leader": expect.anything() },
    });
  });

  it("describes a write: path parameters, the command ID header, the body, the answers", () => {
    const put = doc.paths["/v1/catalog/{key}"]?.put as Record<string, unknown>;
    expect(put.parameters).toEqual([
      expect.objectContaining({ name: "key", in: "path", required: true }),
      { $ref: "#/components/parameters/CommandId" },
    ]);
    expect(put.requestBody).toMatchObject({
      required: true,
      content: { "application/json": { schema: { required: ["value"] } } },
    });
    expect(Object.keys(put.responses as object).sort()).toEqual(
      ["200", "400", "401", "403", "404", "409", "412", "413", "429", "500", "503", "504"].sort(),
    );
    expect(put["x-keyload"]).toEqual({
      kind: "catalog.put",
      lane: "data",
      pool: "data",
      reservation: "data",
      bodyCap: "MaxDataBodyBytes",
      roles: ["writer", "admin"],
    });
    expect(put.security).toEqual([{ apiKey: [] }]);
  });

  it("marks optional bodies optional and health routes keyless", () => {
    const del = doc.paths["/v1/catalog/{key}"]?.delete as Record<string, unknown>;
    expect(del.requestBody).toMatchObject({ required: false });
    expect(doc.paths["/health/ready"]?.get?.security).toEqual([]);
    expect(doc.paths["/v1/dispatch/{channel}"]?.get?.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: "after", in: "query" })]),
    );
  });

  it("conforms to the official OpenAPI 3.1 schema (2022-10-07)", () => {
    expect(openApiSchemaProblems(doc)).toEqual([]);
  });

  it("fails that check for a broken document, so a pass means something", () => {
    const broken = structuredClone(doc);
    (broken.paths["/v1/catalog/{key}"] as Record<string, unknown>).fetch = { responses: {} };
    expect(openApiSchemaProblems(broken)).toContainEqual(expect.stringContaining("fetch"));
    // OpenAPI 2's body parameter is no longer an `in` of 3.x.
    const bodyParameter = structuredClone(doc);
    const put = bodyParameter.paths["/v1/catalog/{key}"]?.put as { parameters: Record<string, unknown>[] };
    put.parameters[0] = { ...put.parameters[0], in: "body" };
    expect(openApiSchemaProblems(bodyParameter).join("\n")).toMatch(/put\/parameters\/0\/in/);
  });

  it("is served at /openapi.json to a key of any role", async () => {
    const fx = httpFixture();
    const headers = { authorization: bearer("reader") };
    const response = await fx.app.inject({ method: "GET", url: "/openapi.json", headers });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(doc);
    await fx.close();
  });
});
