/** One upstream OAuth authorization attempt of an MCP client and, once authorized, its tokens (table mcp_oauth_credential). */
import { randomUUID } from "node:crypto";
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

export const MCP_OAUTH_STATUSES = ["pending", "authorized", "failed", "revoked"] as const;
export type McpOauthStatus = (typeof MCP_OAUTH_STATUSES)[number];

/** The secret half of an attempt, encrypted at rest as one JSON value. */
export interface McpOauthSecrets {
  /** The PKCE verifier, until the code is exchanged. */
  codeVerifier?: string;
  /** The client as registered (dynamic registration) or configured: client_id, client_secret, auth method. */
  clientInformation?: Record<string, unknown>;
  /** The token response as last received (access_token, refresh_token, token_type, scope). */
  tokens?: Record<string, unknown>;
}

/**
 * An attempt is `pending` from its start until the callback, then `authorized` (tokens held) or `failed`;
 * `revoked` once an admin revoked it or a newer attempt of the same client replaced it. `stateHash` is the
 * SHA-256 of the single-use `state` value, cleared when the callback spends it. Fields are `declare`d so
 * ES2022 class fields do not shadow MikroORM's prototype accessors.
 */
export class McpOauthCredentialRecord {
  declare [OptionalProps]?: "id" | "status" | "stateHash" | "authorizationServerUrl" | "serverMetadata" | "resource" | "tokenExpiresAt" | "tokenScopes" | "error" | "createdAt" | "updatedAt";

  declare id: string;
  declare clientId: string;
  declare status: McpOauthStatus;
  declare stateHash: string | null;
  declare redirectUri: string;
  declare authorizationServerUrl: string | null;
  /** The authorization server's metadata as used (discovered, with configured endpoints over it). */
  declare serverMetadata: Record<string, unknown> | null;
  declare resource: string | null;
  declare secrets: McpOauthSecrets;
  declare tokenExpiresAt: Date | null;
  declare tokenScopes: string[];
  declare error: string | null;
  declare createdAt: Date;
  declare expiresAt: Date;
  declare updatedAt: Date;
}

/** Mapping of McpOauthCredentialRecord. */
export const McpOauthCredentialSchema = new EntitySchema<McpOauthCredentialRecord>({
  class: McpOauthCredentialRecord,
  tableName: "mcp_oauth_credential",
  properties: {
    id: { type: "uuid", primary: true, onCreate: () => randomUUID() },
    clientId: { type: "uuid", index: "mcp_oauth_credential_client_index" },
    status: { enum: true, items: [...MCP_OAUTH_STATUSES], onCreate: () => "pending" },
    stateHash: { type: "text", nullable: true, unique: "mcp_oauth_credential_state_unique", onCreate: () => null },
    redirectUri: { type: "text" },
    authorizationServerUrl: { type: "text", nullable: true, onCreate: () => null },
    serverMetadata: { type: "json", nullable: true, onCreate: () => null },
    resource: { type: "text", nullable: true, onCreate: () => null },
    secrets: { type: new EncryptedJsonType<McpOauthSecrets>() },
    tokenExpiresAt: { type: "datetime", nullable: true, onCreate: () => null },
    tokenScopes: { type: "json", onCreate: () => [] },
    error: { type: "text", nullable: true, onCreate: () => null },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    expiresAt: { type: "datetime" },
    updatedAt: { type: "datetime", onCreate: () => new Date() },
  },
});
