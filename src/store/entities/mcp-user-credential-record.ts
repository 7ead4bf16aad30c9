/** One end-user's header values for one per_user_headers MCP client (table mcp_user_credential). */
import { randomUUID } from "node:crypto";
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

export const MCP_IDENTITY_KINDS = ["user", "vk", "session"] as const;
export type McpIdentityKind = (typeof MCP_IDENTITY_KINDS)[number];

export const MCP_CREDENTIAL_STATUSES = ["active", "needs_update", "orphaned"] as const;
export type McpCredentialStatus = (typeof MCP_CREDENTIAL_STATUSES)[number];

/**
 * A per-user credential, unique per (client, identity). `values` is encrypted at rest; `headerKeys` repeats
 * the header names in clear so listings and schema checks never need the secret. Fields are `declare`d so
 * ES2022 class fields do not shadow MikroORM's prototype accessors.
 */
export class McpUserCredentialRecord {
  declare [OptionalProps]?: "id" | "status" | "createdAt" | "updatedAt";

  declare id: string;
  declare clientId: string;
  declare identityKind: McpIdentityKind;
  /** User name, virtual key id, or session id. */
  declare identityId: string;
  declare values: Record<string, string>;
  declare headerKeys: string[];
  declare status: McpCredentialStatus;
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of McpUserCredentialRecord. */
export const McpUserCredentialSchema = new EntitySchema<McpUserCredentialRecord>({
  class: McpUserCredentialRecord,
  tableName: "mcp_user_credential",
  uniques: [{ name: "mcp_user_credential_identity_unique", properties: ["clientId", "identityKind", "identityId"] }],
  properties: {
    id: { type: "uuid", primary: true, onCreate: () => randomUUID() },
    clientId: { type: "uuid", index: "mcp_user_credential_client_index" },
    identityKind: { enum: true, items: [...MCP_IDENTITY_KINDS] },
    identityId: { type: "text" },
    values: { type: new EncryptedJsonType<Record<string, string>>() },
    headerKeys: { type: "json" },
    status: { enum: true, items: [...MCP_CREDENTIAL_STATUSES], onCreate: () => "active" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date() },
  },
});
