/**
 * Who a per-user credential belongs to (docs/credentials-oauth-sso.md, "Caller identity"): a
 * signed-in user of the gateway, a virtual key, or a session id, in that order of precedence.
 */
import { GatewayError, invalidField } from "../../errors.js";
import type { McpIdentityKind } from "../../store/index.js";

/** "user", "vk" or "session". */
export type IdentityKind = McpIdentityKind;

/** The caller a per-user call or flow is bound to. */
export interface CallerIdentity {
  kind: IdentityKind;
  /** User name, virtual key id, or session id: what the credential is stored under. */
  id: string;
  /** What people see: user name, virtual key name, or session id. */
  name: string;
}

/** The header carrying a session id. */
export const SESSION_ID_HEADER = "x-gw-mcp-session-id";

/** Session ids are caller-chosen; this keeps them printable and bounded. */
const SESSION_ID_PATTERN = /^[\x21-\x7e]{1,256}$/;

/** The session identity a header value gives, null without one; a malformed value is a 400 naming the header. */
export function sessionIdentity(raw: string | null | undefined): CallerIdentity | null {
  const value = raw?.trim() ?? "";
  if (value === "") return null;
  if (!SESSION_ID_PATTERN.test(value)) {
    throw invalidField(SESSION_ID_HEADER, "must be 1-256 printable ASCII characters without spaces");
  }
  return { kind: "session", id: value, name: value };
}

/** Applies the precedence user > virtual key > session; null when the caller has none of them. */
export function pickIdentity(candidates: {
  /** A gateway user name, or an SSO user by subject and display name. */
  user: string | { id: string; name: string } | null;
  virtualKey: { id: string; name: string } | null;
  session: CallerIdentity | null;
}): CallerIdentity | null {
  const { user } = candidates;
  if (typeof user === "string") return { kind: "user", id: user, name: user };
  if (user !== null) return { kind: "user", id: user.id, name: user.name };
  if (candidates.virtualKey !== null) return { kind: "vk", id: candidates.virtualKey.id, name: candidates.virtualKey.name };
  return candidates.session;
}

/** A phrase naming an identity for messages, e.g. `virtual key "team-a"`. */
export function describeIdentity(identity: Pick<CallerIdentity, "kind" | "name">): string {
  const label = identity.kind === "user" ? "user" : identity.kind === "vk" ? "virtual key" : "session";
  return `${label} "${identity.name}"`;
}

/** The inline 401 for a per-user call that carries no identity at all. */
export function identityRequired(clientName: string): GatewayError {
  return new GatewayError(
    "unauthenticated",
    `MCP client "${clientName}" uses per-user credentials and requires an identity: send a virtual key (x-gw-vk or Authorization: Bearer <virtual key>), sign in to the gateway (Authorization: Bearer <session token> from POST /api/session/login, an IdP access token, or the SSO login), or set the ${SESSION_ID_HEADER} header`,
    { type: "mcp_identity_required", httpStatus: 401 },
  );
}
