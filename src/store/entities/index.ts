/** Every entity mapping the ORM is initialised with; a new entity file is added here and nowhere else. */
import { AdminSessionSchema } from "./admin-session-record.js";
import { McpClientSchema } from "./mcp-client-record.js";
import { SettingSchema } from "./setting-record.js";

export * from "./admin-session-record.js";
export * from "./mcp-client-record.js";
export * from "./setting-record.js";

/** The schemas passed to MikroORM's `entities` option. */
export const ENTITY_SCHEMAS = [McpClientSchema, AdminSessionSchema, SettingSchema];
