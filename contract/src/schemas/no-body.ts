import { Type } from "@sinclair/typebox";
import { orNull } from "./json-schema.js";

/** The body of a route that needs none: absent, null or an object, and unused. */
export const NoBodySchema = orNull(Type.Object({}, { description: "Optional and unused" }));
