/** Moves MCP clients between the proto messages of gw.admin.v1 and the domain types of src/mcp. */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { invalidField } from "../errors.js";
import {
  AUTH_TYPES,
  CONNECTION_TYPES,
  REDACTED,
  effectiveStickiness,
  isOauth,
  type AuthType,
  type ConnectionType,
  type McpClientSpec,
} from "../mcp/client-spec.js";
import { emptyOauthConfig, type OauthConfigSpec } from "../mcp/oauth/oauth-config.js";
import type { LastFailureView, RuntimeClientView } from "../mcp/client-state.js";
import type { McpClientRecord } from "../store/index.js";
import {
  AuthTypeSchema,
  ClientStateSchema,
  ConnectionTypeSchema,
  FailureStageSchema,
  McpClientSchema,
  TokenExchangeGrantStyle,
  ToolSchema,
  ToolState,
  type McpClient,
  type Tool,
} from "../../gen/gw/admin/v1/mcp_client_pb.js";
import type { McpToolRecord } from "../store/index.js";
import type { TokenExchangeSpec } from "../mcp/token-exchange/token-exchange-config.js";
import { enumInputNumber, enumNumberRestName } from "../proto-json/enum-names.js";
import { recordToSpec } from "../mcp/client-repository.js";

/** The domain connection type of a proto value; UNSPECIFIED is a 400. */
export function connectionTypeOf(value: number, field = "connection_type"): ConnectionType {
  const name = enumNumberRestName(ConnectionTypeSchema, value);
  const found = CONNECTION_TYPES.find((t) => t === name);
  if (!found) throw invalidField(field, `is required: one of ${CONNECTION_TYPES.join(", ")}`);
  return found;
}

/** The domain auth type of a proto value; UNSPECIFIED means the default, none. */
export function authTypeOf(value: number): AuthType {
  if (value === 0) return "none";
  const name = enumNumberRestName(AuthTypeSchema, value);
  const found = AUTH_TYPES.find((t) => t === name);
  if (!found) throw invalidField("auth_type", `must be one of ${AUTH_TYPES.join(", ")}`);
  return found;
}

/** Header values from the API's `{value}` objects. */
export function headerValues(headers: Record<string, { value: string }>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.value]));
}

/** The domain spec of a create request (user_headers are returned apart: they are never persisted). */
export function configToSpec(cfg: McpClient): McpClientSpec {
  return {
    name: cfg.name,
    connectionType: connectionTypeOf(cfg.connectionType),
    connectionString: cfg.connectionString === "" ? null : cfg.connectionString,
    stdioConfig: cfg.stdioConfig
      ? { command: cfg.stdioConfig.command, args: [...cfg.stdioConfig.args], envs: [...cfg.stdioConfig.envs] }
      : null,
    authType: authTypeOf(cfg.authType),
    headers: headerValues(cfg.headers),
    perUserHeaderKeys: [...cfg.perUserHeaderKeys],
    toolsToExecute: [...cfg.toolsToExecute],
    toolsToAutoExecute: [...cfg.toolsToAutoExecute],
    toolSyncInterval: cfg.toolSyncInterval,
    needsSessionStickiness: cfg.needsSessionStickiness ?? null,
    disabled: cfg.disabled,
    allowOnAllVirtualKeys: cfg.allowOnAllVirtualKeys,
    oauthConfig: oauthConfigOf(cfg),
    isCodeModeClient: cfg.isCodeModeClient,
    tokenExchange: tokenExchangeOf(cfg),
    toolPinning: cfg.toolPinning,
  };
}

/** The domain token_exchange; a client of another auth type keeps it only to refuse it. */
function tokenExchangeOf(cfg: McpClient): TokenExchangeSpec | null {
  const t = cfg.tokenExchange;
  if (!t) return null;
  return {
    audience: t.audience,
    clientId: t.clientId,
    clientSecret: t.clientSecret,
    authorizationServerUrl: t.authorizationServerUrl,
    scopes: [...t.scopes],
    grantStyle: t.grantStyle === TokenExchangeGrantStyle.ENTRA_OBO ? "entra_obo" : "rfc8693",
  };
}

/** The domain oauth_config: an oauth client without one discovers everything; other auth types keep it only to refuse it. */
function oauthConfigOf(cfg: McpClient): OauthConfigSpec | null {
  const o = cfg.oauthConfig;
  if (!o) return isOauth(authTypeOf(cfg.authType)) ? emptyOauthConfig() : null;
  return {
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    authorizeUrl: o.authorizeUrl,
    tokenUrl: o.tokenUrl,
    registrationUrl: o.registrationUrl,
    revocationUrl: o.revocationUrl,
    scopes: [...o.scopes],
    resource: o.resource,
  };
}

/** A last_failure as its proto message. */
export function lastFailureMessage(f: LastFailureView) {
  return {
    stage: enumInputNumber(FailureStageSchema, f.stage) ?? 0,
    message: f.message,
    at: timestampFromDate(f.at),
    since: timestampFromDate(f.since),
  };
}

/** A discovered tool as the API shows it: quarantined with its reason when `quarantined` names it. */
export function toolMessage(tool: McpToolRecord, quarantined: ReadonlyMap<string, string>): Tool {
  const reason = quarantined.get(tool.name);
  return create(ToolSchema, {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema as JsonObject,
    state: reason === undefined ? ToolState.ACTIVE : ToolState.QUARANTINED,
    quarantineReason: reason ?? "",
  });
}

const NONE_QUARANTINED: ReadonlyMap<string, string> = new Map();

/** The read shape of a client: redacted headers, effective stickiness, runtime state, each tool's state. */
export function recordToProto(rec: McpClientRecord, view: RuntimeClientView, quarantined: ReadonlyMap<string, string> = NONE_QUARANTINED): McpClient {
  const spec = recordToSpec(rec);
  return create(McpClientSchema, {
    clientId: rec.id,
    name: spec.name,
    connectionType: enumInputNumber(ConnectionTypeSchema, spec.connectionType) ?? 0,
    connectionString: spec.connectionString ?? "",
    ...(spec.stdioConfig ? { stdioConfig: spec.stdioConfig } : {}),
    authType: enumInputNumber(AuthTypeSchema, spec.authType) ?? 0,
    headers: Object.fromEntries(Object.keys(spec.headers).map((k) => [k, { value: REDACTED }])),
    perUserHeaderKeys: spec.perUserHeaderKeys,
    toolsToExecute: spec.toolsToExecute,
    toolsToAutoExecute: spec.toolsToAutoExecute,
    toolSyncInterval: spec.toolSyncInterval,
    needsSessionStickiness: effectiveStickiness(spec),
    disabled: spec.disabled,
    allowOnAllVirtualKeys: spec.allowOnAllVirtualKeys,
    ...(spec.oauthConfig ? { oauthConfig: { ...spec.oauthConfig, clientSecret: spec.oauthConfig.clientSecret === "" ? "" : REDACTED } } : {}),
    isCodeModeClient: spec.isCodeModeClient,
    ...(spec.tokenExchange
      ? {
          tokenExchange: {
            ...spec.tokenExchange,
            clientSecret: spec.tokenExchange.clientSecret === "" ? "" : REDACTED,
            grantStyle: spec.tokenExchange.grantStyle === "entra_obo" ? TokenExchangeGrantStyle.ENTRA_OBO : TokenExchangeGrantStyle.RFC8693,
          },
        }
      : {}),
    toolPinning: spec.toolPinning ?? false,
    tools: rec.tools.map((t) => toolMessage(t, quarantined)),
    state: enumInputNumber(ClientStateSchema, view.state) ?? 0,
    ...(view.lastFailure ? { lastFailure: lastFailureMessage(view.lastFailure) } : {}),
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
  });
}
