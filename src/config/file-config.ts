/**
 * The shape of the config file and its normalized, typed form. The file is
 * snake_case JSON; the output is camelCase with every default filled in and durations turned into
 * numbers, so nothing downstream re-parses or re-defaults. Only shape, type and required checks live here
 * (plus the client-name hyphen rule and duplicate client names): the cross-field MCP rules belong to the
 * MCP domain, which applies them to the API and the file alike.
 */
import { EgressPolicy, type EgressConfig } from "./egress-policy.js";
import type { DescMessage } from "@bufbuild/protobuf";
import { z } from "zod";
import { GatewayError } from "../errors.js";
import { fieldPathSegments, readEntityJson } from "../proto-json/entity-json.js";
import { GuardrailSchema } from "../../gen/gw/admin/v1/guardrail_pb.js";
import { McpClientSchema } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { VirtualMcpServerSchema } from "../../gen/gw/admin/v1/virtual_mcp_server_pb.js";
import { ProviderSchema } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { BusinessUnitSchema, CustomerSchema, RoutingRuleSchema, TeamSchema, VirtualKeySchema } from "../../gen/gw/routing/v1/governance_pb.js";
import { allowedHeaderProblem } from "./allowed-headers.js";
import { allowedHostProblem, allowedOriginProblem, mcpServerAuthModeOf, mcpServerAuthModeProblem } from "./mcp-server-settings.js";
import { describeValue } from "./config-issues.js";
import { checkedDuration, parseDuration, type DurationRules } from "./duration.js";
import { ssoSchema } from "./sso-config.js";
import { RESERVED_CLIENT_NAMES, reservedNameMessage } from "./reserved-client-names.js";

export type McpConnectionType = "http" | "sse" | "stdio";
export type McpAuthType = "none" | "headers" | "oauth" | "per_user_headers" | "per_user_oauth" | "token_exchange";

/** An MCP client as declared in the file, in the MCP domain's shape. */
export interface McpClientFileConfig {
  name: string;
  connectionType: McpConnectionType;
  connectionString: string | null;
  stdioConfig: { command: string; args: string[]; envs: string[] } | null;
  authType: McpAuthType;
  headers: Record<string, string>;
  perUserHeaderKeys: string[];
  toolsToExecute: string[];
  toolsToAutoExecute: string[];
  /** Whole minutes: positive = every N minutes, 0 = inherit the global interval, -1 = disabled. */
  toolSyncInterval: number;
  needsSessionStickiness: boolean | null;
  disabled: boolean;
  allowOnAllVirtualKeys: boolean;
  /** oauth_config, for oauth clients (every field optional); null when absent. */
  oauthConfig: {
    clientId: string;
    clientSecret: string;
    authorizeUrl: string;
    tokenUrl: string;
    registrationUrl: string;
    revocationUrl: string;
    scopes: string[];
    resource: string;
  } | null;
  isCodeModeClient: boolean;
  /** token_exchange, for token_exchange clients; null when absent. */
  tokenExchange: {
    audience: string;
    clientId: string;
    clientSecret: string;
    authorizationServerUrl: string;
    scopes: string[];
    grantStyle: "rfc8693" | "entra_obo";
  } | null;
  /** tool_pinning, present only when the entry sets it. */
  toolPinning?: boolean;
}

/** Agent-mode tool manager settings (`mcp.tool_manager_config`), every default filled in. */
export type ToolManagerFileConfig = z.output<typeof toolManagerSchema>;

/** The `mcp` section. */
export type McpFileConfig = z.output<typeof mcpSchema>;

/** The `auth_config` section: admin authentication. */
export type AuthFileConfig = z.output<typeof authSchema>;

/** The `client` section: gateway-wide client settings, every default filled in. */
export type ClientFileConfig = z.output<typeof clientSchema>;

/**
 * One entry of `providers`, or of `governance.virtual_keys`: the API's JSON of the entity, checked by the
 * API's own reader (same field names, types and errors) with output-only fields dropped. The domain rules
 * (required keys, URLs, weights) are applied where the API applies them, when the file is seeded.
 */
export type EntityFileConfig = Record<string, unknown>;

/** One entry of `providers` (the provider's name is the entry's key). */
export type ProviderFileConfig = EntityFileConfig;

/** A virtual key: the API's JSON, with `id` and `name` required (the file has no generated ids). */
export type VirtualKeyFileConfig = { id: string; name: string } & EntityFileConfig;

/** A routing rule, business unit, customer or team: the API's JSON, with `id` and `name` required (the file has no generated ids). */
export type RoutingRuleFileConfig = { id: string; name: string } & EntityFileConfig;

/** A guardrail: the API's JSON, with `id` and `name` required (the file has no generated ids). */
export type GuardrailFileConfig = { id: string; name: string } & EntityFileConfig;

/** A virtual MCP server: the API's JSON, with `name` required. */
export type VirtualMcpServerFileConfig = { name: string } & EntityFileConfig;

/** The `governance` section. */
export type GovernanceFileConfig = z.output<typeof governanceSchema>;

/** The `pricing` section. */
export type PricingFileConfig = z.output<typeof pricingSchema>;

/** The whole config file, normalized. */
export type GatewayFileConfig = z.output<typeof gatewayFileConfigSchema>;

const MINUTE_MS = 60_000;
const DEFAULT_TOOL_SYNC_MINUTES = 10;
const DEFAULT_TOOL_EXECUTION_TIMEOUT_MS = 30_000;
const DEFAULT_SESSION_TTL_MS = 24 * 60 * MINUTE_MS;
const DEFAULT_PRICING_SYNC_MS = 24 * 60 * MINUTE_MS;
const DEFAULT_MAX_REQUEST_BODY_BYTES = 16 * 1024 * 1024;
/** A person may be answering an elicitation relayed to the downstream client. */
const DEFAULT_MCP_RELAY_REQUEST_TIMEOUT_MS = 10 * MINUTE_MS;

/** What client.mcp_relay_request_timeout takes, in the file and through the API. */
export const MCP_RELAY_REQUEST_TIMEOUT_RULES: DurationRules = { example: "10m", min: "1s", max: "24h" };

/** An object that rejects unknown keys and lists the allowed ones, so a typo is fixed without opening the docs. */
function strict<S extends z.ZodRawShape>(shape: S) {
  const allowed = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) => (issue.code === "unrecognized_keys" ? `allowed keys: ${allowed}` : undefined),
  });
}

/** An optional section: absent or null parses as `{}`, so every field default is filled in one place. */
function section<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((value): z.output<T> => value ?? schema.parse({}));
}

/** A string that must parse as a URL with one of `protocols`; "" passes when `allowEmpty`. `expected` completes "must be ...". */
function url(protocols: readonly string[], expected: string, allowEmpty: boolean) {
  return z.string().superRefine((text, ctx) => {
    if (text === "" && allowEmpty) return;
    let parsed: URL | undefined;
    try {
      parsed = new URL(text);
    } catch {
      parsed = undefined;
    }
    // The value is not echoed: URLs often carry tokens, and env-resolved ones are meant to stay out of logs.
    if (parsed === undefined || !protocols.includes(parsed.protocol)) ctx.addIssue({ code: "custom", message: `must be ${expected}` });
  });
}

const HTTP = ["http:", "https:"] as const;
const HTTP_URL = "an http:// or https:// URL";

/** A duration string in milliseconds (see duration.ts); `fallbackMs` when absent. */
function duration(fallbackMs: number, rules: DurationRules) {
  return z.unknown().nullish().transform((value, ctx): number => {
    if (value == null) return fallbackMs;
    try {
      return checkedDuration(value, rules);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: (error as Error).message });
      return z.NEVER;
    }
  });
}

/** Milliseconds to the whole-minute encoding of sync intervals. */
function syncMinutes(ms: number): number {
  if (ms === 0) return 0;
  if (ms < 0) return -1;
  // Intervals are stored in whole minutes. Rounding a sub-minute value down would give 0, which means
  // "inherit" - not what was asked - so a positive value is rounded up (30s -> 1 minute, 90s -> 2).
  return Math.ceil(ms / MINUTE_MS);
}

const UNITLESS = /^[+-]?\d+(\.\d+)?$/;

/**
 * A tool-list sync interval in whole minutes. Strings are durations ("10m"; "0" inherits; any negative,
 * unit or not, disables); a bare JSON number is the legacy encoding of Go gateways: nanoseconds.
 */
function syncInterval(fallbackMinutes: number) {
  const wrongType = (input: unknown) =>
    `must be a duration string such as "10m" (or a legacy number of nanoseconds), got ${describeValue(input)}`;
  return z
    .union([z.string(), z.number()], { error: (issue) => (issue.input == null ? undefined : wrongType(issue.input)) })
    .nullish()
    .transform((input, ctx): number => {
      if (input == null) return fallbackMinutes;
      const fail = (message: string): never => {
        ctx.addIssue({ code: "custom", message });
        return z.NEVER;
      };
      if (typeof input === "number") {
        if (!Number.isSafeInteger(input)) {
          return fail(`a bare number is a legacy count of nanoseconds and must be a whole number (got ${input}); prefer a duration string such as "10m"`);
        }
        return syncMinutes(input / 1e6);
      }
      if (UNITLESS.test(input)) {
        const value = Number(input);
        if (value === 0) return 0;
        if (value < 0) return -1;
        return fail(`"${input}" has no unit: write "${input}m" for ${input} minutes (only "0" and negative values may omit the unit)`);
      }
      try {
        return syncMinutes(parseDuration(input));
      } catch (error) {
        return fail((error as Error).message);
      }
    });
}

/** A header value: the file takes a plain string, unlike the API's `{value}` object. */
const headerValue = z.string({
  error: (issue) =>
    issue.code === "invalid_type" && issue.input !== null && typeof issue.input === "object" && !Array.isArray(issue.input)
      ? `must be a plain string: in the config file write "Header-Name": "value" (or "env.NAME"), not {"value": ...}`
      : undefined,
});


const NAME_HYPHEN_MESSAGE =
  "must not contain a hyphen: tools are exposed as <client>-<tool> and split at the first hyphen; use an underscore instead";

/**
 * An MCP client entry: the API's McpClient, read by the API's reader, except two fields the file writes in
 * its own form (header values as plain strings, tool_sync_interval as a duration) and user_headers, which
 * only the API's one-time verify takes. The zod fields below give those forms and the file's messages;
 * every other key is checked against the proto.
 */
const mcpClientSchema = z.looseObject({
  name: z
    .string()
    .min(1)
    .superRefine((name, ctx) => {
      if (name.includes("-")) ctx.addIssue({ code: "custom", message: `${NAME_HYPHEN_MESSAGE} (got "${name}")` });
      if (RESERVED_CLIENT_NAMES.has(name)) ctx.addIssue({ code: "custom", message: reservedNameMessage(name) });
    }),
  // "" is how a read shows a stdio client's unset URL, so it means absent here too.
  connection_string: url(HTTP, HTTP_URL, true).nullish(),
  headers: z.record(z.string(), headerValue).nullish(),
  tool_sync_interval: syncInterval(0),
  user_headers: z
    .never({
      error: "is only for the API's one-time verify; a per_user_headers client declared here starts in pending_verification until POST /api/mcp/client/{id}/verify-headers",
    })
    .optional(),
})
  .superRefine(
    (client, ctx) => {
      // Runs even when other fields failed (see `when`), so one pass reports every problem; the value
      // may then hold raw input, hence the loose reads. The keys above are checked there, the rest as
      // the API checks them.
      const { name: _name, connection_string: _url, headers: _headers, tool_sync_interval: _interval, user_headers: _user, ...rest } = client as Record<string, unknown>;
      readAsApi(McpClientSchema, rest, ctx);
      const type = rest["connection_type"];
      if (type == null) ctx.addIssue({ code: "custom", path: ["connection_type"], message: `is required: one of "http", "sse", "stdio"` });
      if ((type === "http" || type === "sse") && (client["connection_string"] == null || client["connection_string"] === "")) {
        ctx.addIssue({ code: "custom", path: ["connection_string"], message: `is required when connection_type is "${type}"` });
      }
      const stdio = rest["stdio_config"];
      if (isRecord(stdio) && (typeof stdio["command"] !== "string" || stdio["command"] === "")) {
        ctx.addIssue({ code: "custom", path: ["stdio_config", "command"], message: "is required: the executable to spawn" });
      }
      if (type === "stdio" && stdio == null) {
        ctx.addIssue({
          code: "custom",
          path: ["stdio_config"],
          message: `is required when connection_type is "stdio": {"command": "...", "args": [...], "envs": [...]}`,
        });
      }
    },
    { when: (payload) => isRecord(payload.value) },
  )
  .transform((c): McpClientFileConfig => {
    // Every key below was checked by the API's reader in the refinement above.
    const raw = c as Record<string, unknown>;
    const stdio = raw["stdio_config"] as { command?: string; args?: string[]; envs?: string[] } | null | undefined;
    const list = (key: string): string[] => [...((raw[key] as string[] | null | undefined) ?? [])];
    return {
      name: c.name,
      connectionType: raw["connection_type"] as McpConnectionType,
      connectionString: c.connection_string || null,
      stdioConfig: stdio == null ? null : { command: stdio.command ?? "", args: stdio.args ?? [], envs: stdio.envs ?? [] },
      authType: (raw["auth_type"] as McpAuthType | null | undefined) ?? "none",
      headers: c.headers ?? {},
      perUserHeaderKeys: list("per_user_header_keys"),
      toolsToExecute: list("tools_to_execute"),
      toolsToAutoExecute: list("tools_to_auto_execute"),
      toolSyncInterval: c.tool_sync_interval,
      needsSessionStickiness: (raw["needs_session_stickiness"] as boolean | null | undefined) ?? null,
      disabled: (raw["disabled"] as boolean | null | undefined) ?? false,
      allowOnAllVirtualKeys: (raw["allow_on_all_virtual_keys"] as boolean | null | undefined) ?? false,
      oauthConfig: oauthConfigOf(raw["oauth_config"], raw["auth_type"] === "oauth" || raw["auth_type"] === "per_user_oauth"),
      isCodeModeClient: (raw["is_code_mode_client"] as boolean | null | undefined) ?? false,
      tokenExchange: tokenExchangeOf(raw["token_exchange"]),
      ...(typeof raw["tool_pinning"] === "boolean" ? { toolPinning: raw["tool_pinning"] } : {}),
    };
  });

/** A file entry's token_exchange (already checked against the API's schema); the MCP rules check what is required. */
function tokenExchangeOf(value: unknown): McpClientFileConfig["tokenExchange"] {
  if (!isRecord(value)) return null;
  const text = (key: string): string => (typeof value[key] === "string" ? (value[key] as string) : "");
  const scopes = value["scopes"];
  return {
    audience: text("audience"),
    clientId: text("client_id"),
    clientSecret: text("client_secret"),
    authorizationServerUrl: text("authorization_server_url"),
    scopes: Array.isArray(scopes) ? scopes.filter((scope): scope is string => typeof scope === "string") : [],
    grantStyle: value["grant_style"] === "entra_obo" ? "entra_obo" : "rfc8693",
  };
}

/** A file entry's oauth_config (already checked against the API's schema); an oauth client without one discovers everything. */
function oauthConfigOf(value: unknown, oauth: boolean): McpClientFileConfig["oauthConfig"] {
  if (!isRecord(value)) {
    return oauth ? { clientId: "", clientSecret: "", authorizeUrl: "", tokenUrl: "", registrationUrl: "", revocationUrl: "", scopes: [], resource: "" } : null;
  }
  const text = (key: string): string => (typeof value[key] === "string" ? (value[key] as string) : "");
  return {
    clientId: text("client_id"),
    clientSecret: text("client_secret"),
    authorizeUrl: text("authorize_url"),
    tokenUrl: text("token_url"),
    registrationUrl: text("registration_url"),
    revocationUrl: text("revocation_url"),
    scopes: Array.isArray(value["scopes"]) ? (value["scopes"] as string[]) : [],
    resource: text("resource"),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

const mcpClientListSchema = z.array(mcpClientSchema).superRefine(
  (clients, ctx) => {
    // Elements that failed validation are raw input here; both shapes carry `name`.
    const firstIndex = new Map<string, number>();
    clients.forEach((client, index) => {
      const name: unknown = isRecord(client) ? client["name"] : undefined;
      if (typeof name !== "string" || name === "") return;
      const earlier = firstIndex.get(name);
      if (earlier === undefined) firstIndex.set(name, index);
      else ctx.addIssue({ code: "custom", path: [index, "name"], message: `duplicate client name "${name}" (first declared at mcp.client_configs[${earlier}])` });
    });
  },
  { when: (payload) => Array.isArray(payload.value) },
);

/** How code mode lays out tool declarations: one file per client, or one per tool. */
export const CODE_MODE_BINDING_LEVELS = ["server", "tool"] as const;

/** `mcp.tool_manager_config`; its defaults are the gateway's (see runtime-settings.ts). */
export const toolManagerSchema = strict({
  max_agent_depth: z.int().min(1).max(50).nullish(),
  tool_execution_timeout: duration(DEFAULT_TOOL_EXECUTION_TIMEOUT_MS, { example: "30s", sign: "positive" }),
  code_mode_binding_level: z.enum(CODE_MODE_BINDING_LEVELS).nullish(),
}).transform((t) => ({
  maxAgentDepth: t.max_agent_depth ?? 10,
  toolExecutionTimeoutMs: t.tool_execution_timeout,
  codeModeBindingLevel: t.code_mode_binding_level ?? "server",
}));

/** `load_balancer_config`: the adaptive load balancer's toggles (defaults: both levels on, pinned requests untouched). */
export const loadBalancerSchema = strict({
  direction_selection_enabled: z.boolean().nullish(),
  route_selection_enabled: z.boolean().nullish(),
  append_fallbacks_to_pinned: z.boolean().nullish(),
  reroute_failed_directions: z.boolean().nullish(),
  prune_failed_fallbacks: z.boolean().nullish(),
}).transform((l) => ({
  directionSelectionEnabled: l.direction_selection_enabled ?? true,
  routeSelectionEnabled: l.route_selection_enabled ?? true,
  appendFallbacksToPinned: l.append_fallbacks_to_pinned ?? false,
  rerouteFailedDirections: l.reroute_failed_directions ?? false,
  pruneFailedFallbacks: l.prune_failed_fallbacks ?? false,
}));

/** The load balancer's toggles as the gateway uses them. */
export type LoadBalancerFileConfig = z.output<typeof loadBalancerSchema>;

/** The `mcp` section; its global sync interval default is the gateway's. */
export const mcpSchema = strict({
  client_configs: mcpClientListSchema.nullish(),
  tool_manager_config: section(toolManagerSchema),
  tool_sync_interval: syncInterval(DEFAULT_TOOL_SYNC_MINUTES),
  // Read as the API reads a virtual server; its own checks (members, names) run when the file is loaded and seeded.
  virtual_servers: z.array(withName(VirtualMcpServerSchema)).nullish(),
}).transform((m) => ({
  clientConfigs: m.client_configs ?? [],
  virtualServers: m.virtual_servers ?? [],
  toolManagerConfig: m.tool_manager_config,
  /** Global tool-list sync interval in whole minutes (same encoding as a client's toolSyncInterval). */
  toolSyncIntervalMinutes: m.tool_sync_interval,
}));

const authSchema = strict({
  is_enabled: z.boolean().nullish(),
  admin_username: z.string().nullish(),
  admin_password: z.string().nullish(),
  session_ttl: duration(DEFAULT_SESSION_TTL_MS, { example: "24h", sign: "positive" }),
})
  .superRefine(
    (auth, ctx) => {
      const raw = auth as Record<string, unknown>;
      if (raw["is_enabled"] !== true) return;
      for (const field of ["admin_username", "admin_password"]) {
        if (raw[field] == null || raw[field] === "") {
          ctx.addIssue({ code: "custom", path: [field], message: "is required when is_enabled is true" });
        }
      }
    },
    { when: (payload) => isRecord(payload.value) },
  )
  .transform((a) => ({
    isEnabled: a.is_enabled ?? false,
    /** Present whenever isEnabled is true. */
    adminUsername: a.admin_username ?? null,
    /** Present whenever isEnabled is true. */
    adminPassword: a.admin_password ?? null,
    sessionTtlMs: a.session_ttl,
  }));

/** A zod refinement from a "why is this wrong, or null" rule. */
function problemCheck(problem: (value: string) => string | null) {
  return (value: string, ctx: z.RefinementCtx): void => {
    const found = problem(value);
    if (found !== null) ctx.addIssue({ code: "custom", message: found });
  };
}

/** The `client` section; its defaults are the gateway's (see runtime-settings.ts). */
export const clientSchema = strict({
  prometheus_labels: z.array(z.string().min(1)).nullish(),
  drop_excess_requests: z.boolean().nullish(),
  initial_pool_size: z.int().min(0).nullish(),
  allowed_headers: z
    .array(
      z.string().superRefine((entry, ctx) => {
        const problem = allowedHeaderProblem(entry);
        if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
      }),
    )
    .nullish(),
  mcp_enable_temp_token_auth: z.boolean().nullish(),
  mcp_external_client_url: url(HTTP, HTTP_URL, true).nullish(),
  enforce_governance: z.boolean().nullish(),
  mcp_disable_auto_tool_inject: z.boolean().nullish(),
  allowed_hosts: z.array(z.string().superRefine(problemCheck(allowedHostProblem))).nullish(),
  allowed_origins: z.array(z.string().superRefine(problemCheck(allowedOriginProblem))).nullish(),
  mcp_server_auth_mode: z.string().superRefine(problemCheck(mcpServerAuthModeProblem)).nullish(),
  max_request_body_bytes: z.int().positive().nullish(),
  mcp_relay_request_timeout: duration(DEFAULT_MCP_RELAY_REQUEST_TIMEOUT_MS, MCP_RELAY_REQUEST_TIMEOUT_RULES),
  // As GET /config shows it (minutes; negative disables), so the API's settings paste into the file.
  mcp_tool_sync_interval: z
    .int()
    .refine((minutes) => minutes !== 0, "must be a number of minutes, positive (or negative to disable)")
    .nullish(),
}).transform((c) => ({
  prometheusLabels: c.prometheus_labels ?? [],
  dropExcessRequests: c.drop_excess_requests ?? false,
  /** 0: no connection is opened before a request needs one. */
  initialPoolSize: c.initial_pool_size ?? 0,
  allowedHeaders: c.allowed_headers ?? ["*"],
  mcpEnableTempTokenAuth: c.mcp_enable_temp_token_auth ?? false,
  /** "" when unset; otherwise an http(s) URL. */
  mcpExternalClientUrl: c.mcp_external_client_url ?? "",
  enforceGovernance: c.enforce_governance ?? false,
  /** /v1 requests get MCP tools only when they send an x-gw-mcp-include-* header. */
  mcpDisableAutoToolInject: c.mcp_disable_auto_tool_inject ?? false,
  /** Host names answered besides localhost, 127.0.0.1 and [::1] while bound to a loopback address. */
  allowedHosts: c.allowed_hosts ?? [],
  /** Browser origins allowed besides the gateway's own. */
  allowedOrigins: c.allowed_origins ?? [],
  mcpServerAuthMode: mcpServerAuthModeOf(c.mcp_server_auth_mode ?? ""),
  maxRequestBodyBytes: c.max_request_body_bytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES,
  /** How long a server-to-client request relayed by the MCP relay waits for the downstream client's answer. */
  mcpRelayRequestTimeoutMs: c.mcp_relay_request_timeout,
  /** `client.mcp_tool_sync_interval`, the API's name for the global sync interval (whole minutes); null when unset. */
  mcpToolSyncIntervalMinutes: c.mcp_tool_sync_interval ?? null,
}));

/**
 * An entity the admin API also writes, read by the API's reader: unknown keys, wrong types and bad enum
 * names get the API's message at the exact path, so the file and the API accept the same entries.
 */
function apiEntity(desc: DescMessage) {
  return z.unknown().transform((input, ctx): EntityFileConfig => readAsApi(desc, input, ctx));
}

/** `input` read by the API's reader; its 400 becomes an issue at the path it names. */
function readAsApi(desc: DescMessage, input: unknown, ctx: z.RefinementCtx): EntityFileConfig {
  try {
    return readEntityJson(desc, input);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    const field = error.field ?? "";
    ctx.addIssue({ code: "custom", path: fieldPathSegments(field), message: withoutFieldPrefix(error.message, field) });
    return z.NEVER;
  }
}

/** The reader's messages start with the path; a config issue already shows it in front. */
function withoutFieldPrefix(message: string, field: string): string {
  if (field !== "" && message.startsWith(`${field}: `)) return message.slice(field.length + 2);
  if (message.startsWith(`unknown field "${field}"`)) return `unknown key${message.slice(`unknown field "${field}"`.length)}`;
  return message;
}

/**
 * `providers`: name -> provider; an entry that repeats its name (as GET shows it, or as `provider` the way
 * Bifrost's body gives it) must repeat it exactly.
 */
const providersSchema = z.record(z.string(), apiEntity(ProviderSchema)).transform((providers, ctx): Record<string, ProviderFileConfig> => {
  const out: Record<string, ProviderFileConfig> = {};
  for (const [name, { name: repeated, provider: named, ...provider }] of Object.entries(providers)) {
    for (const [field, value] of [["name", repeated], ["provider", named]] as const) {
      if (value !== undefined && value !== name) {
        ctx.addIssue({ code: "custom", path: [name, field], message: `is "${String(value)}" but the entry's key is "${name}"; leave it out or make them equal` });
      }
    }
    out[name] = provider;
  }
  return out;
});

const virtualKeySchema = apiEntity(VirtualKeySchema).superRefine((key, ctx) => {
  for (const field of ["id", "name"]) {
    if (typeof key[field] !== "string" || key[field] === "") ctx.addIssue({ code: "custom", path: [field], message: "is required" });
  }
}) as unknown as z.ZodType<VirtualKeyFileConfig>;

/** An entity the file names by id (the API generates ids; the file has none to generate). */
function withIdAndName(desc: DescMessage): z.ZodType<RoutingRuleFileConfig> {
  return apiEntity(desc).superRefine((entry, ctx) => {
    for (const field of ["id", "name"]) {
      if (typeof entry[field] !== "string" || entry[field] === "") ctx.addIssue({ code: "custom", path: [field], message: "is required" });
    }
  }) as unknown as z.ZodType<RoutingRuleFileConfig>;
}

/** An entity the API names by its name alone. */
function withName(desc: DescMessage): z.ZodType<VirtualMcpServerFileConfig> {
  return apiEntity(desc).superRefine((entry, ctx) => {
    if (typeof entry["name"] !== "string" || entry["name"] === "") ctx.addIssue({ code: "custom", path: ["name"], message: "is required" });
  }) as unknown as z.ZodType<VirtualMcpServerFileConfig>;
}

const routingRuleSchema = withIdAndName(RoutingRuleSchema);

const governanceSchema = strict({
  virtual_keys: z.array(virtualKeySchema).nullish(),
  // Read as the API reads a rule; the rule's own checks (CEL, scope) run when the file is seeded.
  routing_rules: z.array(routingRuleSchema).nullish(),
  // Seeded before the keys, which may name them.
  business_units: z.array(withIdAndName(BusinessUnitSchema)).nullish(),
  customers: z.array(withIdAndName(CustomerSchema)).nullish(),
  teams: z.array(withIdAndName(TeamSchema)).nullish(),
}).transform((g) => ({
  businessUnits: g.business_units ?? [],
  customers: g.customers ?? [],
  teams: g.teams ?? [],
  virtualKeys: g.virtual_keys ?? [],
  routingRules: g.routing_rules ?? [],
}));

const pricingSchema = strict({
  pricing_url: url(["http:", "https:", "file:"], "an http://, https:// or file:// URL", true).nullish(),
  sync_interval: duration(DEFAULT_PRICING_SYNC_MS, { example: "24h", sign: "positive" }),
}).transform((p) => ({
  /** "" = the bundled datasheet only. */
  pricingUrl: p.pricing_url ?? "",
  syncIntervalMs: p.sync_interval,
}));

const modelRefSchema = strict({
  provider: z.string().min(1, "is required: a configured provider"),
  model: z.string().min(1, "is required: a model of that provider"),
});

const tierExamples = z.array(z.string().min(1, "must not be empty").max(8_000, "must be at most 8000 characters")).max(200, "must list at most 200 examples").nullish();

/** `routing.complexity`: how complexity tiers are computed for rules that read `complexity_tier`. */
const complexitySchema = strict({
  mechanism: z.enum(["semantic", "llm"], { error: "must be semantic or llm" }),
  embedding: modelRefSchema.nullish(),
  classifier: modelRefSchema.nullish(),
  examples: strict({ SIMPLE: tierExamples, MEDIUM: tierExamples, COMPLEX: tierExamples }).nullish(),
})
  .superRefine((c, ctx) => {
    if (c.mechanism === "semantic") {
      if (!c.embedding) ctx.addIssue({ code: "custom", path: ["embedding"], message: 'is required with mechanism "semantic": {"provider", "model"} of an embeddings model' });
      for (const tier of ["SIMPLE", "MEDIUM", "COMPLEX"] as const) {
        if ((c.examples?.[tier]?.length ?? 0) === 0) ctx.addIssue({ code: "custom", path: ["examples", tier], message: 'needs at least one example request with mechanism "semantic"' });
      }
    }
    if (c.mechanism === "llm" && !c.classifier) ctx.addIssue({ code: "custom", path: ["classifier"], message: 'is required with mechanism "llm": {"provider", "model"} of a small chat model' });
  })
  .transform((c) => ({
    mechanism: c.mechanism,
    embedding: c.embedding ?? null,
    classifier: c.classifier ?? null,
    examples: { SIMPLE: c.examples?.SIMPLE ?? [], MEDIUM: c.examples?.MEDIUM ?? [], COMPLEX: c.examples?.COMPLEX ?? [] },
  }));

const routingSchema = strict({
  complexity: complexitySchema.nullish(),
}).transform((r) => ({ complexity: r.complexity ?? null }));

/** Where spans go: an OTLP/HTTP collector; absent (or no endpoint) leaves tracing off unless OTEL_* variables set it. */
const otlpSchema = strict({
  /** The collector's base URL; /v1/traces is appended, as with OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: url(HTTP, HTTP_URL, true).nullish(),
  headers: z.record(z.string(), z.string()).nullish(),
  sample_ratio: z.number().min(0, "must be between 0 and 1").max(1, "must be between 0 and 1").nullish(),
  capture_content: z.boolean().nullish(),
}).transform((o) => ({
  endpoint: o.endpoint ?? "",
  headers: o.headers ?? {},
  /** null: the sampler of OTEL_TRACES_SAMPLER, or every request. */
  sampleRatio: o.sample_ratio ?? null,
  captureContent: o.capture_content ?? false,
}));

const telemetrySchema = strict({
  otlp: section(otlpSchema),
}).transform((t) => ({ otlp: t.otlp }));

/** The `telemetry` section. */
export type TelemetryFileConfig = z.output<typeof telemetrySchema>;

/** The `server` section: what one client connection may cost. Read only at start. */
export const serverSchema = strict({
  max_header_bytes: z.int().min(1024, "must be at least 1024").max(1024 * 1024, "must be at most 1048576").nullish(),
  headers_timeout: duration(30_000, { example: "30s", sign: "positive" }),
  // "0" turns the whole-request limit off; streaming answers are not limited by it (it covers receiving).
  request_timeout: duration(300_000, { example: "5m" }),
  keep_alive_timeout: duration(65_000, { example: "65s", sign: "positive" }),
  max_connections: z.int().positive().nullish(),
}).superRefine((s, ctx) => {
  if (s.request_timeout < 0) ctx.addIssue({ code: "custom", path: ["request_timeout"], message: "must be 0 (no limit) or a positive duration" });
  else if (s.request_timeout > 0 && s.request_timeout < s.headers_timeout) {
    ctx.addIssue({ code: "custom", path: ["request_timeout"], message: "must be at least server.headers_timeout (or 0 for no limit)" });
  }
}).transform((s) => ({
  /** Largest request head (request line and headers) in bytes; past it, 431. */
  maxHeaderBytes: s.max_header_bytes ?? 16 * 1024,
  /** Time to receive a complete request head; past it, 408 and the connection closes. */
  headersTimeoutMs: s.headers_timeout,
  /** Time to receive a whole request, head and body; past it, 408. 0: no limit. */
  requestTimeoutMs: s.request_timeout,
  /** How long an idle keep-alive connection (or HTTP/2 session) stays open. */
  keepAliveTimeoutMs: s.keep_alive_timeout,
  /** Open connections at once; further ones are closed as they are accepted. */
  maxConnections: s.max_connections ?? 10_000,
}));

/** The `server` section as the listener uses it. */
export type ServerLimits = z.output<typeof serverSchema>;

/** The server limits when the config file names none. */
export function defaultServerLimits(): ServerLimits {
  return serverSchema.parse({});
}
/** One egress list: each entry must parse (a CIDR, an address, a host name or a *.suffix). */
const egressList = z.array(z.string()).nullish().transform((entries) => entries ?? []);

const egressSchema = strict({ allow: egressList, deny: egressList })
  .superRefine((e, ctx) => {
    try {
      new EgressPolicy(e, "network.egress");
    } catch (err) {
      ctx.addIssue({ code: "custom", message: err instanceof Error ? err.message : String(err) });
    }
  })
  .transform((e): EgressConfig => ({ allow: e.allow, deny: e.deny }));

const networkSchema = strict({ egress: section(egressSchema) }).transform((n) => ({ egress: n.egress }));
/** The provider and model that embed questions for semantic caching. */
const cacheEmbeddingSchema = strict({
  provider: z.string().trim().min(1, "is required: a configured provider, e.g. \"openai\""),
  model: z.string().trim().min(1, "is required: an embedding model of that provider, e.g. \"text-embedding-3-small\""),
});

/** The `cache` section: gateway-wide response cache settings (modes and ttls are per key and per request). */
const cacheSchema = strict({
  embedding: cacheEmbeddingSchema.nullish(),
}).transform((c) => ({ embedding: c.embedding ?? null }));

/** The `cache` section. */
export type CacheFileConfig = z.output<typeof cacheSchema>;

const databaseSchema = strict({
  url: url(["postgres:", "postgresql:"], "a postgres:// or postgresql:// URL", false).nullish(),
}).transform((d) => ({ url: d.url ?? null }));

/** Budget and rate-limit counters shared through Redis instead of the database (a cluster on a database server). */
const redisSchema = strict({
  url: url(["redis:", "rediss:"], "a redis:// or rediss:// URL", false).nullish(),
  key_prefix: z.string().min(1).max(100).nullish(),
}).transform((r) => ({ url: r.url ?? null, keyPrefix: r.key_prefix ?? "gw:" }));

/** The `redis` section. */
export type RedisFileConfig = z.output<typeof redisSchema>;

/** The whole file. Parse env-resolved JSON with it; see load-config.ts for the error formatting. */
export const gatewayFileConfigSchema = strict({
  // Lets editors validate the file against a JSON schema; ignored by the gateway.
  $schema: z.string().nullish(),
  database: section(databaseSchema),
  auth_config: section(authSchema),
  client: section(clientSchema),
  providers: providersSchema.nullish(),
  governance: section(governanceSchema),
  mcp: section(mcpSchema),
  pricing: section(pricingSchema),
  routing: section(routingSchema),
  telemetry: section(telemetrySchema),
  load_balancer_config: section(loadBalancerSchema),
  server: section(serverSchema),
  network: section(networkSchema),
  cache: section(cacheSchema),
  sso: ssoSchema,
  redis: section(redisSchema),
  // Read as the API reads a guardrail; its own checks (CEL, settings, owners) run when the file is loaded and seeded.
  guardrails: z.array(withIdAndName(GuardrailSchema) as z.ZodType<GuardrailFileConfig>).nullish(),
})
  .superRefine(
    (f, ctx) => {
      const raw = f as Record<string, unknown>;
      const client = raw["client"];
      const mcp = raw["mcp"];
      if (isRecord(client) && client["mcp_tool_sync_interval"] != null && isRecord(mcp) && mcp["tool_sync_interval"] != null) {
        ctx.addIssue({ code: "custom", path: ["client", "mcp_tool_sync_interval"], message: "sets the same interval as mcp.tool_sync_interval; keep one of them" });
      }
    },
    { when: (payload) => isRecord(payload.value) },
  )
  .transform((f) => ({
    database: f.database,
    redis: f.redis,
    server: f.server,
    authConfig: f.auth_config,
    client: f.client,
    providers: f.providers ?? {},
    governance: f.governance,
    mcp: { ...f.mcp, toolSyncIntervalMinutes: f.client.mcpToolSyncIntervalMinutes ?? f.mcp.toolSyncIntervalMinutes },
    pricing: f.pricing,
    routing: f.routing,
    telemetry: f.telemetry,
    loadBalancer: f.load_balancer_config,
    network: f.network,
    cache: f.cache,
    sso: f.sso,
    guardrails: f.guardrails ?? [],
  }));
