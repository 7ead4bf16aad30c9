/**
 * The caller's virtual key for caller-facing endpoints outside routing (tool execution, listings): resolved
 * from the request headers against the in-memory registry, with the same refusals /v1 inference gives.
 */
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { GatewayError } from "../../errors.js";
import { RoutingError } from "../../routing/routing-error.js";
import type { VirtualKey } from "../../routing/types.js";
import { pickIdentity, sessionIdentity, SESSION_ID_HEADER, type CallerIdentity } from "../../mcp/credentials/index.js";
import { bearerToken, type AdminAuth } from "../admin-auth.js";
import type { IdpTokens } from "../sso/idp-tokens.js";
import { credentialFromHeaders } from "../../inference/credential.js";
import type { Inference } from "../../inference/state.js";

/** The active virtual key the headers name, or null without one; throws 401 for an unknown key (or a missing one under enforce_governance) and 403 for an inactive one. */
export function callerVirtualKey(
  get: (name: string) => string | null | undefined,
  inference: Inference,
  settings: RuntimeSettings,
  idp?: Pick<IdpTokens, "claimsIssuer">,
): VirtualKey | null {
  const key = inference.virtualKeys.resolve(credentialFromHeaders(get, idp ? (token) => idp.claimsIssuer(token) : undefined));
  if (key === null) {
    if (settings.client.enforceGovernance) {
      throw new GatewayError("unauthenticated", "this gateway requires a virtual key (client.enforce_governance); send it as x-gw-vk or Authorization: Bearer", {
        type: "caller_virtual_key_required",
        httpStatus: 401,
      });
    }
    return null;
  }
  if (!key.isActive) throw new RoutingError("policy_virtual_key_inactive", `virtual key "${key.name}" is inactive; an admin can switch it on with is_active: true`);
  return key;
}

/** What resolving a tool caller reads. */
export interface CallerDeps {
  inference: Inference;
  settings: RuntimeSettings;
  auth: AdminAuth;
  /** IdP bearer tokens of the SSO issuer (absent: SSO off). */
  idp?: IdpTokens;
  /** The SSO user behind a request's gw_session cookie (absent: SSO off). */
  ssoSession?: (cookie: string | null | undefined) => SsoCaller | null;
}

/** A user signed in through SSO: who, and the IdP access token their per-user calls exchange. */
export interface SsoCaller {
  id: string;
  name: string;
  /** The IdP access token, kept in memory only; null when the session holds none. */
  token: string | null;
}

/** Who is calling a tool: the virtual key that governs it and the identity per-user credentials bind to. */
export interface ToolCaller {
  key: VirtualKey | null;
  identity: CallerIdentity | null;
  /** The signed-in user's own IdP access token (token_exchange sends it to the IdP, never upstream). */
  subjectToken: string | null;
}

/**
 * The signed-in user behind `Authorization: Bearer`, or null. A bearer value that is a known virtual key
 * is not looked up as a session, so a virtual key's calls never wait on the session store.
 */
async function signedInUser(get: (name: string) => string | null | undefined, deps: CallerDeps): Promise<string | SsoCaller | null> {
  const token = bearerToken(get("authorization"));
  if (token !== null && deps.idp?.claimsIssuer(token)) {
    // Checked before the request reached a handler; this finds it in the verified-token cache.
    const { user } = await deps.idp.verify(token);
    return { id: user.id, name: user.name, token };
  }
  if (!deps.auth.enabled) return null;
  if (token === null) return null;
  try {
    if (deps.inference.virtualKeys.resolve(token) !== null) return null;
  } catch {
    // Not a virtual key: it may be a session token.
  }
  return (await deps.auth.authenticate(get("authorization")))?.username ?? null;
}

/**
 * Resolves a caller from request headers: a bearer that is a valid session token is
 * the signed-in user and not a virtual key; the key otherwise comes from any of its four headers; a
 * session id from x-gw-mcp-session-id. The agent loop resolves its callers with this too.
 */
export async function resolveToolCaller(
  get: (name: string) => string | null | undefined,
  deps: CallerDeps,
): Promise<ToolCaller> {
  const bearerUser = await signedInUser(get, deps);
  // A browser's SSO session is the user too, below a user named by the bearer; its virtual key still governs.
  const user = bearerUser ?? deps.ssoSession?.(get("cookie")) ?? null;
  const keyHeaders = bearerUser === null ? get : (name: string) => (name === "authorization" ? null : get(name));
  const key = callerVirtualKey(keyHeaders, deps.inference, deps.settings, deps.idp);
  const identity = pickIdentity({ user, virtualKey: key, session: sessionIdentity(get(SESSION_ID_HEADER)) });
  return { key, identity, subjectToken: typeof user === "object" && user !== null ? user.token : null };
}
