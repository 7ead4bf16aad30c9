/** Every entity mapping the ORM is initialised with; a new entity file is added here and nowhere else. */
import { AdminSessionSchema } from "./admin-session-record.js";
import { McpClientSchema } from "./mcp-client-record.js";
import { McpOauthCredentialSchema } from "./mcp-oauth-credential-record.js";
import { McpUserCredentialSchema } from "./mcp-user-credential-record.js";
import { OAuth2ModelSchema } from "./oauth2-model-record.js";
import { ProviderSchema } from "./provider-record.js";
import { SettingSchema } from "./setting-record.js";
import { UsageSchema } from "./usage-record.js";
import { VirtualKeySchema } from "./virtual-key-record.js";

export * from "./admin-session-record.js";
export * from "./mcp-client-record.js";
export * from "./mcp-oauth-credential-record.js";
export * from "./mcp-user-credential-record.js";
export * from "./oauth2-model-record.js";
export * from "./provider-record.js";
export * from "./setting-record.js";
export * from "./usage-record.js";
export * from "./virtual-key-record.js";

/** The schemas passed to MikroORM's `entities` option. */
export const ENTITY_SCHEMAS = [McpClientSchema, AdminSessionSchema, SettingSchema, ProviderSchema, VirtualKeySchema, UsageSchema, McpUserCredentialSchema, McpOauthCredentialSchema, OAuth2ModelSchema];
