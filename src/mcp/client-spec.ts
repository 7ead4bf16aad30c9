/**
 * The MCP client configuration as the domain sees it, and every validation rule of it
 * (docs/mcp-gateway.md lists them). The API and the config file both go through these functions, so a
 * rule holds the same way whichever door a client comes in by. Field names in messages are the
 * documented snake_case names, so a user can find the field they sent.
 */
import { egressPolicy } from "../config/egress-policy.js";
import { invalidField } from "../errors.js";
import { RESERVED_CLIENT_NAMES, reservedNameMessage } from "../config/reserved-client-names.js";
import { applyOauthPatch, validateOauthConfig, type OauthConfigSpec } from "./oauth/oauth-config.js";
import { applyTokenExchangePatch, validateTokenExchange, type TokenExchangeSpec } from "./token-exchange/token-exchange-config.js";
import {
  MCP_AUTH_TYPES as AUTH_TYPES,
  MCP_CONNECTION_TYPES as CONNECTION_TYPES,
  type McpAuthType as AuthType,
  type McpConnectionType as ConnectionType,
} from "../store/index.js";

export { AUTH_TYPES, CONNECTION_TYPES, type AuthType, type ConnectionType };

/** Auth types whose upstream calls always use a fresh per-call connection, whatever the stickiness setting. */
const PER_USER_AUTH_TYPES: ReadonlySet<AuthType> = new Set(["per_user_headers", "per_user_oauth", "token_exchange"]);

/** Auth types whose clients start in pending_verification and run nothing until an admin verifies them. */
const VERIFIED_AUTH_TYPES: ReadonlySet<AuthType> = new Set(["per_user_headers", "oauth", "per_user_oauth", "token_exchange"]);

/** Auth types that authorize upstream with OAuth and take an oauth_config. */
const OAUTH_AUTH_TYPES: ReadonlySet<AuthType> = new Set(["oauth", "per_user_oauth"]);

/** Sent back instead of a header value; sending it back on update keeps the stored value. */
export const REDACTED = "<redacted>";

/** The process a stdio client spawns. */
export interface StdioSpec {
  command: string;
  args: string[];
  envs: string[];
}

/** The admin-controlled configuration of one MCP client. */
export interface McpClientSpec {
  name: string;
  connectionType: ConnectionType;
  connectionString: string | null;
  stdioConfig: StdioSpec | null;
  authType: AuthType;
  headers: Record<string, string>;
  perUserHeaderKeys: string[];
  toolsToExecute: string[];
  toolsToAutoExecute: string[];
  toolSyncInterval: number;
  needsSessionStickiness: boolean | null;
  disabled: boolean;
  /** Callers whose virtual key's mcp_configs do not name this client still see its tools. */
  allowOnAllVirtualKeys: boolean;
  /** How an oauth client authorizes upstream; null for other auth types. */
  oauthConfig: OauthConfigSpec | null;
  /** Models and /mcp callers reach the client's tools only through the code-mode meta-tools. */
  isCodeModeClient: boolean;
  /** How a token_exchange client exchanges callers' IdP tokens; null or absent for other auth types. */
  tokenExchange?: TokenExchangeSpec | null;
  /** Each tool's first discovered definition is pinned; a later change quarantines the tool until approved. Absent: false. */
  toolPinning?: boolean;
}

/** Fields fixed at creation (the API declares them IMMUTABLE); the config file's edits to them are ignored with a warning. */
export type ImmutableField = "connection_type" | "connection_string" | "stdio_config" | "auth_type";

/** A client name becomes the prefix of OpenAI function names (`<client>-<tool>`), hence the strict alphabet. */
const NAME_PATTERN = /^[A-Za-z0-9_]{1,64}$/;
/** RFC 9110 field-name token. */
const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Any control character but horizontal tab would let a value smuggle a second header. */
const HEADER_VALUE_FORBIDDEN = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** True when calls to this client open a fresh upstream connection each time. */
export function isPerCall(spec: Pick<McpClientSpec, "connectionType" | "authType" | "needsSessionStickiness">): boolean {
  if (PER_USER_AUTH_TYPES.has(spec.authType)) return true;
  if (spec.connectionType !== "http") return false;
  return spec.needsSessionStickiness !== true;
}

/** True when a client of this auth type waits in pending_verification until its one-time verification. */
export function needsVerification(authType: AuthType): boolean {
  return VERIFIED_AUTH_TYPES.has(authType);
}

/** True for the OAuth auth types (oauth, per_user_oauth): an admin consent starts them. */
export function isOauth(authType: AuthType): boolean {
  return OAUTH_AUTH_TYPES.has(authType);
}

/** True for the per-user auth types (per_user_headers, per_user_oauth, token_exchange). */
export function isPerUser(authType: AuthType): boolean {
  return PER_USER_AUTH_TYPES.has(authType);
}

/** Validates a client name: required, no hyphen, letters, digits and underscores only, not a reserved path. */
export function validateName(name: string, field = "name"): void {
  if (name.length === 0) throw invalidField(field, "is required");
  if (RESERVED_CLIENT_NAMES.has(name)) {
    throw invalidField(field, reservedNameMessage(name));
  }
  if (name.includes("-")) {
    throw invalidField(field, `must not contain a hyphen ("${name}"): tools are exposed as <client>-<tool> and split on the first hyphen`);
  }
  if (!NAME_PATTERN.test(name)) {
    throw invalidField(field, `must be 1-64 letters, digits or underscores ("${name}") so that <client>-<tool> is a valid function name`);
  }
}

function validateToolList(list: readonly string[], field: string): void {
  const seen = new Set<string>();
  list.forEach((tool, i) => {
    if (tool.length === 0) throw invalidField(`${field}[${i}]`, "must not be empty");
    if (seen.has(tool)) throw invalidField(`${field}[${i}]`, `duplicate tool "${tool}"`);
    seen.add(tool);
  });
  if (seen.has("*") && list.length > 1) {
    throw invalidField(field, `"*" means all tools and cannot be combined with named tools`);
  }
}

function validateHeaderName(name: string, field: string): void {
  if (!HEADER_NAME_PATTERN.test(name)) throw invalidField(field, `"${name}" is not a valid HTTP header name`);
}

function validateHeaders(headers: Record<string, string>, field: string): void {
  for (const [name, value] of Object.entries(headers)) {
    validateHeaderName(name, `${field}.${name}`);
    // The value is a secret: the message names the header, never the value.
    if (HEADER_VALUE_FORBIDDEN.test(value)) throw invalidField(`${field}.${name}`, "value contains a control character");
  }
}

function validateUrl(value: string | null, field: string): void {
  if (value === null || value.length === 0) throw invalidField(field, "is required for http and sse clients");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidField(field, `"${value}" is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalidField(field, `must be an http:// or https:// URL, got "${url.protocol}"`);
  }
  egressPolicy().checkUrl(value, field);
}

function validateHeaderKeys(keys: readonly string[], field: string): void {
  const seen = new Set<string>();
  keys.forEach((key, i) => {
    validateHeaderName(key, `${field}[${i}]`);
    const lower = key.toLowerCase();
    if (seen.has(lower)) throw invalidField(`${field}[${i}]`, `duplicate header name "${key}"`);
    seen.add(lower);
  });
}

/**
 * Checks every configuration rule on a complete spec. `fieldPrefix` lets the config
 * file report `mcp.client_configs[2].name` where the API reports `name`.
 */
export function validateSpec(spec: McpClientSpec, fieldPrefix = ""): void {
  const f = (name: string) => `${fieldPrefix}${name}`;
  validateName(spec.name, f("name"));
  if (spec.connectionType === "stdio") {
    if (spec.connectionString) throw invalidField(f("connection_string"), "must be empty for stdio clients (use stdio_config)");
    if (!spec.stdioConfig || spec.stdioConfig.command.trim().length === 0) {
      throw invalidField(f("stdio_config.command"), "is required for stdio clients");
    }
    spec.stdioConfig.envs.forEach((name, i) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw invalidField(f(`stdio_config.envs[${i}]`), `"${name}" is not an environment variable name`);
    });
    if (spec.authType !== "none") {
      throw invalidField(f("auth_type"), `stdio clients accept only auth_type none, got ${spec.authType}`);
    }
  } else {
    validateUrl(spec.connectionString, f("connection_string"));
    if (spec.stdioConfig) throw invalidField(f("stdio_config"), `is only for stdio clients, not ${spec.connectionType}`);
  }
  if (isOauth(spec.authType)) validateOauthConfig(spec.oauthConfig, f("oauth_config"));
  else if (spec.oauthConfig !== null) throw invalidField(f("oauth_config"), `is only for oauth and per_user_oauth clients, not ${spec.authType}`);
  if (spec.authType === "token_exchange") validateTokenExchange(spec.tokenExchange ?? null, f("token_exchange"));
  else if ((spec.tokenExchange ?? null) !== null) throw invalidField(f("token_exchange"), `is only for token_exchange clients, not ${spec.authType}`);
  if (spec.authType === "per_user_headers" && spec.connectionType === "stdio") {
    throw invalidField(f("auth_type"), "per_user_headers is valid only for http and sse clients");
  }
  if (spec.needsSessionStickiness === false && spec.connectionType !== "http") {
    throw invalidField(
      f("needs_session_stickiness"),
      `${spec.connectionType} clients are always sticky; false is only valid for http clients`,
    );
  }
  const headerCount = Object.keys(spec.headers).length;
  if (headerCount > 0 && spec.authType !== "headers" && spec.authType !== "per_user_headers") {
    throw invalidField(f("headers"), `are only sent with auth_type headers or per_user_headers, not ${spec.authType}`);
  }
  if (spec.authType === "headers" && headerCount === 0) {
    throw invalidField(f("headers"), "auth_type headers needs at least one header");
  }
  validateHeaders(spec.headers, f("headers"));
  if (spec.authType === "per_user_headers") {
    if (spec.perUserHeaderKeys.length === 0) {
      throw invalidField(f("per_user_header_keys"), "must name at least one header for per_user_headers clients");
    }
    validateHeaderKeys(spec.perUserHeaderKeys, f("per_user_header_keys"));
  } else if (spec.perUserHeaderKeys.length > 0) {
    throw invalidField(f("per_user_header_keys"), `is only for per_user_headers clients, not ${spec.authType}`);
  }
  validateToolList(spec.toolsToExecute, f("tools_to_execute"));
  validateToolList(spec.toolsToAutoExecute, f("tools_to_auto_execute"));
  if (!Number.isInteger(spec.toolSyncInterval)) throw invalidField(f("tool_sync_interval"), "must be a whole number of minutes");
}

/** Checks the admin sample values sent at creation or to verify-headers: exactly the declared keys, each non-empty. */
export function validateUserHeaders(declared: readonly string[], userHeaders: Record<string, string>, field = "user_headers"): void {
  const byLower = new Map(Object.keys(userHeaders).map((k) => [k.toLowerCase(), k]));
  for (const key of declared) {
    const given = byLower.get(key.toLowerCase());
    if (given === undefined) throw invalidField(`${field}.${key}`, `is missing: user_headers must cover every per_user_header_key (${declared.join(", ")})`);
    if ((userHeaders[given] ?? "").length === 0) throw invalidField(`${field}.${key}`, "must not be empty");
  }
  const declaredLower = new Set(declared.map((k) => k.toLowerCase()));
  for (const key of Object.keys(userHeaders)) {
    if (!declaredLower.has(key.toLowerCase())) throw invalidField(`${field}.${key}`, "is not one of the declared per_user_header_keys");
  }
  validateHeaders(userHeaders, field);
}

/** A partial update: only the fields present are applied. */
export type McpClientPatch = Partial<
  Pick<
    McpClientSpec,
    "name" | "headers" | "perUserHeaderKeys" | "toolsToExecute" | "toolsToAutoExecute" | "toolSyncInterval" | "needsSessionStickiness" | "disabled" | "allowOnAllVirtualKeys" | "oauthConfig" | "isCodeModeClient" | "tokenExchange" | "toolPinning"
  >
>;

/** The immutable fields as they would be after an update, to compare with what is stored. */
export type ImmutableValues = Pick<McpClientSpec, "connectionType" | "connectionString" | "stdioConfig" | "authType">;

/** Names the immutable fields whose new value differs from the stored one. */
export function changedImmutableFields(current: McpClientSpec, next: Partial<ImmutableValues>): ImmutableField[] {
  const changed: ImmutableField[] = [];
  if (next.connectionType !== undefined && next.connectionType !== current.connectionType) changed.push("connection_type");
  if (next.connectionString !== undefined && (next.connectionString ?? "") !== (current.connectionString ?? "")) changed.push("connection_string");
  if (next.stdioConfig !== undefined && JSON.stringify(next.stdioConfig) !== JSON.stringify(current.stdioConfig)) changed.push("stdio_config");
  if (next.authType !== undefined && next.authType !== current.authType) changed.push("auth_type");
  return changed;
}

/**
 * Applies a patch and re-validates the whole result. Header values equal to REDACTED keep the stored
 * value, so a read-modify-write round trip never wipes a secret.
 */
export function applyPatch(current: McpClientSpec, patch: McpClientPatch): McpClientSpec {
  const next: McpClientSpec = { ...current };
  if (patch.name !== undefined) next.name = patch.name;
  if (patch.headers !== undefined) {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(patch.headers)) {
      if (value === REDACTED) {
        const stored = current.headers[name];
        if (stored === undefined) throw invalidField(`headers.${name}`, `has no stored value to keep; send the real value instead of "${REDACTED}"`);
        headers[name] = stored;
      } else {
        headers[name] = value;
      }
    }
    next.headers = headers;
  }
  if (patch.perUserHeaderKeys !== undefined) next.perUserHeaderKeys = patch.perUserHeaderKeys;
  if (patch.toolsToExecute !== undefined) next.toolsToExecute = patch.toolsToExecute;
  if (patch.toolsToAutoExecute !== undefined) next.toolsToAutoExecute = patch.toolsToAutoExecute;
  if (patch.toolSyncInterval !== undefined) next.toolSyncInterval = patch.toolSyncInterval;
  if (patch.needsSessionStickiness !== undefined) next.needsSessionStickiness = patch.needsSessionStickiness;
  if (patch.disabled !== undefined) next.disabled = patch.disabled;
  if (patch.allowOnAllVirtualKeys !== undefined) next.allowOnAllVirtualKeys = patch.allowOnAllVirtualKeys;
  if (patch.oauthConfig !== undefined) next.oauthConfig = applyOauthPatch(current.oauthConfig, patch.oauthConfig, REDACTED);
  if (patch.isCodeModeClient !== undefined) next.isCodeModeClient = patch.isCodeModeClient;
  if (patch.tokenExchange !== undefined) next.tokenExchange = applyTokenExchangePatch(current.tokenExchange ?? null, patch.tokenExchange ?? null, REDACTED);
  if (patch.toolPinning !== undefined) next.toolPinning = patch.toolPinning;
  validateSpec(next);
  return next;
}

/** The stickiness a client actually has (per-user auth types are always per-call), as reported on reads. */
export function effectiveStickiness(spec: McpClientSpec): boolean {
  return !isPerCall(spec);
}

