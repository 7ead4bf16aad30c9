/** Every entity mapping the ORM is initialised with; a new entity file is added here and nowhere else. */
import { AdminSessionSchema } from "./admin-session-record.js";
import { GatewayNodeSchema } from "./gateway-node-record.js";
import { GovernanceGroupSchema } from "./governance-group-record.js";
import { GuardrailSchema } from "./guardrail-record.js";
import { KeyCheckSchema } from "./key-check-record.js";
import { LevelUsageSchema } from "./level-usage-record.js";
import { McpClientSchema } from "./mcp-client-record.js";
import { McpClientNodeStateSchema } from "./mcp-client-node-state-record.js";
import { McpOauthCredentialSchema } from "./mcp-oauth-credential-record.js";
import { McpUserCredentialSchema } from "./mcp-user-credential-record.js";
import { McpUserFlowSchema } from "./mcp-user-flow-record.js";
import { OAuth2ModelSchema } from "./oauth2-model-record.js";
import { PricingSnapshotSchema } from "./pricing-snapshot-record.js";
import { ProviderSchema } from "./provider-record.js";
import { ResponseCacheSchema } from "./response-cache-record.js";
import { RoutingRuleSchema } from "./routing-rule-record.js";
import { SettingSchema } from "./setting-record.js";
import { SsoLoginSchema, SsoSessionSchema } from "./sso-state-records.js";
import { SharedCounterSchema } from "./shared-counter-record.js";
import { UsageMinuteSchema } from "./usage-minute-record.js";
import { UsageSchema } from "./usage-record.js";
import { VirtualKeySchema } from "./virtual-key-record.js";

export * from "./admin-session-record.js";
export * from "./gateway-node-record.js";
export * from "./governance-group-record.js";
export * from "./guardrail-record.js";
export * from "./key-check-record.js";
export * from "./level-usage-record.js";
export * from "./mcp-client-record.js";
export * from "./mcp-client-node-state-record.js";
export * from "./mcp-oauth-credential-record.js";
export * from "./mcp-user-credential-record.js";
export * from "./mcp-user-flow-record.js";
export * from "./oauth2-model-record.js";
export * from "./pricing-snapshot-record.js";
export * from "./provider-record.js";
export * from "./response-cache-record.js";
export * from "./routing-rule-record.js";
export * from "./setting-record.js";
export * from "./sso-state-records.js";
export * from "./shared-counter-record.js";
export * from "./usage-minute-record.js";
export * from "./usage-record.js";
export * from "./virtual-key-record.js";

/** The schemas passed to MikroORM's `entities` option. */
export const ENTITY_SCHEMAS = [McpClientSchema, AdminSessionSchema, SettingSchema, ProviderSchema, VirtualKeySchema, UsageSchema, McpUserCredentialSchema, McpUserFlowSchema, McpOauthCredentialSchema, OAuth2ModelSchema, RoutingRuleSchema, GovernanceGroupSchema, PricingSnapshotSchema, ResponseCacheSchema, GatewayNodeSchema, McpClientNodeStateSchema, KeyCheckSchema, LevelUsageSchema, SsoLoginSchema, SsoSessionSchema, SharedCounterSchema, UsageMinuteSchema, GuardrailSchema];
