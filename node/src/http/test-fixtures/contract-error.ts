import { expect } from "vitest";

interface Answer {
  readonly statusCode: number;
  readonly body: string;
  readonly headers: Record<string, unknown>;
}

/**
 * Asserts the contract's error body (section 6) and nothing else: the five allowed fields, no stack
 * trace, no framework default body.
 */
export function expectContractError(
  response: Answer,
  status: number,
  code: string,
  reason?: string,
): { code: string; reason: string; message: string; commandId?: string; details?: Record<string, unknown> } {
  expect(response.statusCode, response.body).toBe(status);
  expect(String(response.headers["content-type"])).toMatch(/^application\/json/);
  const body = JSON.parse(response.body) as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(["error"]);
  const error = body.error;
  for (const field of Object.keys(error)) {
    expect(["code", "reason", "message", "commandId", "details"]).toContain(field);
  }
  expect(error.code).toBe(code);
  if (reason !== undefined) expect(error.reason).toBe(reason);
  expect(typeof error.message).toBe("string");
  expect(response.body).not.toMatch(/\bat .+:\d+:\d+|node_modules|statusCode|FST_/);
  return error as ReturnType<typeof expectContractError>;
}
