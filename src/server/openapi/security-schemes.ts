/**
 * The credentials the gateway reads, as OpenAPI security schemes, and the sets of them each kind of
 * operation accepts. An empty requirement (`{}`) among the alternatives means the call may carry none.
 */
import type { Schema, SecurityRequirement } from "../rest/openapi.js";

/** Every scheme the document declares, by name. */
export const SECURITY_SCHEMES: Readonly<Record<string, Schema>> = {
  adminSession: {
    type: "http",
    scheme: "bearer",
    description:
      "The token of POST /api/session/login. Checked only while auth_config.is_enabled; with admin auth off the admin paths take no credential. On caller paths it names the signed-in user that per-user MCP credentials bind to.",
  },
  virtualKey: {
    type: "http",
    scheme: "bearer",
    description:
      "A virtual key (Authorization: Bearer sk-gw-...). Optional unless client.enforce_governance is on; an unknown key is a 401, an inactive one a 403.",
  },
  virtualKeyHeader: { type: "apiKey", in: "header", name: "x-gw-vk", description: "A virtual key, as in the virtualKey scheme." },
  virtualKeyApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "A virtual key, as in the virtualKey scheme." },
  virtualKeyGoogApiKey: { type: "apiKey", in: "header", name: "x-goog-api-key", description: "A virtual key, as in the virtualKey scheme." },
  mcpSession: {
    type: "apiKey",
    in: "header",
    name: "x-gw-mcp-session-id",
    description: "A caller-chosen session id (1-256 printable ASCII, no spaces) that per-user MCP credentials are stored under.",
  },
  tempToken: {
    type: "apiKey",
    in: "header",
    name: "x-gw-temp-token",
    description: "The single-use token of a submission link's `#t=` fragment (client.mcp_enable_temp_token_auth).",
  },
  metricsBasic: {
    type: "http",
    scheme: "basic",
    description: "auth_config.admin_username and admin_password. Checked only while auth_config.is_enabled.",
  },
};

const ANONYMOUS: SecurityRequirement = {};
const VIRTUAL_KEY: readonly SecurityRequirement[] = [
  { virtualKey: [] },
  { virtualKeyHeader: [] },
  { virtualKeyApiKey: [] },
  { virtualKeyGoogApiKey: [] },
];

/** No credential at all. */
export const OPEN: readonly SecurityRequirement[] = [];

/** An admin session (when admin auth is on). */
export const ADMIN: readonly SecurityRequirement[] = [{ adminSession: [] }];

/** /metrics: HTTP basic with the admin credentials (when admin auth is on). */
export const METRICS: readonly SecurityRequirement[] = [{ metricsBasic: [] }];

/** A caller on /v1: a virtual key or none. */
export const CALLER: readonly SecurityRequirement[] = [...VIRTUAL_KEY, ANONYMOUS];

/** A caller whose identity per-user MCP credentials bind to: a signed-in user, a virtual key, a session id, or none. */
export const IDENTIFIED_CALLER: readonly SecurityRequirement[] = [{ adminSession: [] }, ...VIRTUAL_KEY, { mcpSession: [] }, ANONYMOUS];

/** Whoever finishes a submission flow: the signed-in user, the holder of the link's temp token, or anyone the flow allows. */
export const FLOW_SUBMITTER: readonly SecurityRequirement[] = [{ adminSession: [] }, { tempToken: [] }, ANONYMOUS];
