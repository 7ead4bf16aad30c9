/** The stored configuration of one upstream MCP client (table mcp_client). */
import { randomUUID } from "node:crypto";
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

export const MCP_CONNECTION_TYPES = ["http", "sse", "stdio"] as const;
export type McpConnectionType = (typeof MCP_CONNECTION_TYPES)[number];

export const MCP_AUTH_TYPES = [
  "none",
  "headers",
  "oauth",
  "per_user_headers",
  "per_user_oauth",
  "token_exchange",
] as const;
export type McpAuthType = (typeof MCP_AUTH_TYPES)[number];

export const MCP_DISCOVERY_STATUSES = ["active", "needs_update"] as const;
export type McpDiscoveryStatus = (typeof MCP_DISCOVERY_STATUSES)[number];

export const MCP_CLIENT_SOURCES = ["api", "config"] as const;
export type McpClientSource = (typeof MCP_CLIENT_SOURCES)[number];

/** The process a stdio client spawns. */
export interface McpStdioConfig {
  command: string;
  args: string[];
  envs: string[];
}

/** The non-secret fields of an oauth client's oauth_config (the client secret is a column of its own, encrypted). */
export interface McpOauthConfig {
  clientId: string;
  authorizeUrl: string;
  tokenUrl: string;
  registrationUrl: string;
  revocationUrl: string;
  scopes: string[];
  resource: string;
}

/** The non-secret fields of a token_exchange client's token_exchange (the client secret is a column of its own, encrypted). */
export interface McpTokenExchangeConfig {
  audience: string;
  clientId: string;
  /** "" means the SSO issuer's token endpoint. */
  authorizationServerUrl: string;
  scopes: string[];
  grantStyle: "rfc8693" | "entra_obo";
}

/** One tool as last listed by the upstream server. */
export interface McpToolRecord {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** One MCP client; `headers` is encrypted at rest. Fields are `declare`d so ES2022 class fields do not shadow MikroORM's prototype accessors. */
export class McpClientRecord {
  declare [OptionalProps]?:
    | "id"
    | "connectionString"
    | "stdioConfig"
    | "headers"
    | "perUserHeaderKeys"
    | "toolsToExecute"
    | "toolsToAutoExecute"
    | "toolSyncInterval"
    | "needsSessionStickiness"
    | "disabled"
    | "allowOnAllVirtualKeys"
    | "isCodeModeClient"
    | "tools"
    | "source"
    | "verified"
    | "discoveryHeaders"
    | "discoveryStatus"
    | "oauthConfig"
    | "oauthClientSecret"
    | "tokenExchange"
    | "tokenExchangeClientSecret"
    | "toolPinning"
    | "toolPins"
    | "createdAt"
    | "updatedAt";

  declare id: string;
  declare name: string;
  declare connectionType: McpConnectionType;
  declare connectionString: string | null;
  declare stdioConfig: McpStdioConfig | null;
  declare authType: McpAuthType;
  declare headers: Record<string, string>;
  declare perUserHeaderKeys: string[];
  declare toolsToExecute: string[];
  declare toolsToAutoExecute: string[];
  /** Minutes; 0 inherits the global interval, negative disables periodic sync. */
  declare toolSyncInterval: number;
  declare needsSessionStickiness: boolean | null;
  declare disabled: boolean;
  /** Virtual keys that do not name the client in their mcp_configs still see its tools. */
  declare allowOnAllVirtualKeys: boolean;
  /** Models reach the client's tools only through the code-mode meta-tools. */
  declare isCodeModeClient: boolean;
  declare tools: McpToolRecord[];
  declare source: McpClientSource;
  /** Whether the one-time verification of a per_user_headers client has been done. */
  declare verified: boolean;
  /** The admin discovery credential kept by verify-headers (per_user_headers only), encrypted. */
  declare discoveryHeaders: Record<string, string> | null;
  /** Status of the admin discovery credential: null when there is none. */
  declare discoveryStatus: McpDiscoveryStatus | null;
  /** How an oauth client authorizes (null for other auth types). */
  declare oauthConfig: McpOauthConfig | null;
  /** oauth_config.client_secret, encrypted; null when none is configured. */
  declare oauthClientSecret: string | null;
  /** How a token_exchange client exchanges callers' tokens (null for other auth types). */
  declare tokenExchange: McpTokenExchangeConfig | null;
  /** token_exchange.client_secret, encrypted; null when none is configured. */
  declare tokenExchangeClientSecret: string | null;
  /** Each tool's first discovered definition is pinned, and a later change quarantines the tool until approved. */
  declare toolPinning: boolean;
  /** Tool name -> the hash of its pinned definition (tool_pinning only). */
  declare toolPins: Record<string, string>;
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of McpClientRecord; defaults apply when em.create() leaves a field out. */
export const McpClientSchema = new EntitySchema<McpClientRecord>({
  class: McpClientRecord,
  tableName: "mcp_client",
  properties: {
    id: { type: "uuid", primary: true, onCreate: () => randomUUID() },
    name: { type: "string", unique: "mcp_client_name_unique" },
    connectionType: { enum: true, items: [...MCP_CONNECTION_TYPES] },
    connectionString: { type: "text", nullable: true, onCreate: () => null },
    stdioConfig: { type: "json", nullable: true, onCreate: () => null },
    authType: { enum: true, items: [...MCP_AUTH_TYPES] },
    headers: { type: new EncryptedJsonType<Record<string, string>>(), onCreate: () => ({}) },
    perUserHeaderKeys: { type: "json", onCreate: () => [] },
    toolsToExecute: { type: "json", onCreate: () => [] },
    toolsToAutoExecute: { type: "json", onCreate: () => [] },
    toolSyncInterval: { type: "integer", onCreate: () => 0 },
    needsSessionStickiness: { type: "boolean", nullable: true, onCreate: () => null },
    disabled: { type: "boolean", onCreate: () => false },
    allowOnAllVirtualKeys: { type: "boolean", onCreate: () => false },
    isCodeModeClient: { type: "boolean", onCreate: () => false },
    tools: { type: "json", onCreate: () => [] },
    source: { enum: true, items: [...MCP_CLIENT_SOURCES], onCreate: () => "api" },
    verified: { type: "boolean", onCreate: () => false },
    discoveryHeaders: { type: new EncryptedJsonType<Record<string, string>>(), nullable: true, onCreate: () => null },
    discoveryStatus: { enum: true, items: [...MCP_DISCOVERY_STATUSES], nullable: true, onCreate: () => null },
    oauthConfig: { type: "json", nullable: true, onCreate: () => null },
    oauthClientSecret: { type: new EncryptedJsonType<string>(), nullable: true, onCreate: () => null },
    tokenExchange: { type: "json", nullable: true, onCreate: () => null },
    tokenExchangeClientSecret: { type: new EncryptedJsonType<string>(), nullable: true, onCreate: () => null },
    toolPinning: { type: "boolean", onCreate: () => false },
    toolPins: { type: "json", onCreate: () => ({}) },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
