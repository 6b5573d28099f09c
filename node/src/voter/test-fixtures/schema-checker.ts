import { ErrorBodySchema, type WireSchema } from "@keyload/contract";
import Fastify, { type FastifyInstance } from "fastify";
import { SCHEMA_VALIDATION } from "../../http/http-app.js";
import { ROUTES, type RouteSpec } from "../../http/routes.js";

/**
 * Checks answers against the schemas the routes document, with the same validator and options the
 * edge uses for requests: one route per schema, which answers 204 when the posted body conforms.
 */
export class SchemaChecker {
  private constructor(private readonly app: FastifyInstance) {}

  static async start(): Promise<SchemaChecker> {
    // An answer may carry any JSON a caller stored, "__proto__" and "constructor" fields included.
    const app = Fastify({
      ajv: { customOptions: SCHEMA_VALIDATION },
      onProtoPoisoning: "ignore",
      onConstructorPoisoning: "ignore",
    });
    app.setErrorHandler((error, _request, reply) =>
      reply.code(422).send({ message: error instanceof Error ? error.message : String(error) }),
    );
    const accept = (schema: WireSchema) => ({ schema: { body: schema } });
    ROUTES.forEach((route, i) => {
      app.post(`/${i}`, accept(route.response), (_request, reply) => reply.code(204).send());
    });
    app.post("/error", accept(ErrorBodySchema), (_request, reply) => reply.code(204).send());
    await app.ready();
    return new SchemaChecker(app);
  }

  /** Null when `body` is what `route` documents on success; else what does not conform. */
  response(route: RouteSpec, body: unknown): Promise<string | null> {
    return this.check(`/${ROUTES.indexOf(route)}`, body);
  }

  /** Null when `body` is the contract's error body (section 6); else what does not conform. */
  error(body: unknown): Promise<string | null> {
    return this.check("/error", body);
  }

  close(): Promise<void> {
    return this.app.close();
  }

  private async check(path: string, body: unknown): Promise<string | null> {
    const answer = await this.app.inject({
      method: "POST",
      url: path,
      payload: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
    return answer.statusCode === 204 ? null : answer.body;
  }
}
