/**
 * Who is finishing a per-user flow, read from a request the same way at every step that can finish one (the
 * page's header submission and Connect, the OAuth callback): the gateway's admin session, the SSO user (an
 * IdP bearer token, else the gw_session cookie), the link's temp token and the browser's flow cookie.
 */
import { FLOW_BROWSER_COOKIE, type SubmitAuth } from "../mcp/credentials/index.js";
import { bearerToken, type AdminAuth } from "./admin-auth.js";
import type { IdpTokens, IdpUser } from "./sso/idp-tokens.js";
import { cookieValue, type SsoLogin } from "./sso/sso-login.js";

/** The header a browser submission carries the link's `#t=` temp token in. */
export const TEMP_TOKEN_HEADER = "x-gw-temp-token";

/** What reading a finisher needs. */
export interface FlowFinisherDeps {
  auth: Pick<AdminAuth, "authenticate" | "enabled">;
  /** Tells an IdP bearer token from a virtual key, and verifies it; absent: SSO off. */
  idp?: Pick<IdpTokens, "claimsIssuer" | "verify">;
  /** SSO browser logins: the user behind a gw_session cookie (absent: SSO off). */
  ssoLogin?: Pick<SsoLogin, "signedIn">;
}

/** The SSO user behind the request's IdP bearer token or, without one, its gw_session cookie, or null; a bad IdP token throws its 401. */
export async function ssoUserOf(headers: Headers, deps: FlowFinisherDeps): Promise<IdpUser | null> {
  const token = bearerToken(headers.get("authorization"));
  // Checked before the request reached a handler when it claims the issuer; verify finds it cached.
  if (token !== null && deps.idp?.claimsIssuer(token)) return (await deps.idp.verify(token)).user;
  return deps.ssoLogin?.signedIn(headers.get("cookie"))?.user ?? null;
}

/** Everything a flow step checks about who is finishing it. */
export async function flowFinisher(headers: Headers, deps: FlowFinisherDeps): Promise<SubmitAuth> {
  const admin = (await deps.auth.authenticate(headers.get("authorization")))?.username ?? null;
  const sso = await ssoUserOf(headers, deps);
  return {
    user: admin,
    tempToken: headers.get(TEMP_TOKEN_HEADER),
    adminAuthEnabled: deps.auth.enabled,
    ssoUser: sso?.id ?? null,
    signedInAs: sso?.name ?? admin,
    browser: cookieValue(headers.get("cookie"), FLOW_BROWSER_COOKIE),
  };
}
