import { Type } from "@sinclair/typebox";
import { scopeId } from "./identifiers.js";
import { enumOf, type Wire } from "./json-schema.js";
import { ROLES } from "./roles.js";
import { written } from "./written.js";

/** The principal catalog (contract section 3): principals and their API keys. */

export const PrincipalWriteSchema = Type.Object({
  principalId: scopeId("The principal to create or update"),
  tenantId: scopeId("The tenant it belongs to"),
  roles: Type.Array(enumOf(ROLES), { minItems: 1 }),
});
export type PrincipalWrite = Wire<typeof PrincipalWriteSchema>;

export const PutPrincipalResultSchema = written({
  principalId: Type.String(),
  tenantId: Type.String(),
  roles: Type.Array(enumOf(ROLES)),
  created: Type.Boolean(),
});
export type PutPrincipalResult = Wire<typeof PutPrincipalResultSchema>;

export const CreateKeyResultSchema = written({
  principalId: Type.String(),
  keyId: Type.String(),
  apiKey: Type.Optional(
    Type.String({
      description:
        "The plain API key, shown this once and stored only as a hash: absent from the answer to a retry " +
        "under the same command ID, whose key was made by the earlier attempt (delete it and create another)",
    }),
  ),
});
export type CreateKeyResult = Wire<typeof CreateKeyResultSchema>;

export const DeleteKeyResultSchema = written({ principalId: Type.String(), keyId: Type.String() });
export type DeleteKeyResult = Wire<typeof DeleteKeyResultSchema>;
