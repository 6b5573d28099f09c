import { afterEach, describe, expect, it } from "vitest";
import { JsonText } from "../requests/json-text.js";
import { bearer } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture } from "./test-fixtures/http-fixture.js";

let fx: HttpFixture;
afterEach(async () => {
  await fx.close();
});

describe("read answers", () => {
  it("send a page the read worker serialized as it is, as JSON", async () => {
    fx = httpFixture();
    const page = '{"items":[{"key":"a","value":{"n":1},"version":1}],"next":"a"}';
    fx.service.onRead = async () => new JsonText(page);
    const response = await fx.app.inject({
      method: "POST",
      url: "/v1/query",
      headers: { authorization: bearer("reader"), "content-type": "application/json" },
      payload: "{}",
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(response.body).toBe(page);
  });
});
