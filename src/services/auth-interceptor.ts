/**
 * Enforces the access each RPC declares in its proto (`(gw.api.v1.access)`). ADMIN calls get the admin
 * principal on their context and, when auth_config is enabled, are refused without a session. CALLER and
 * PUBLIC calls pass untouched: a caller-facing RPC resolves its caller itself, only where its feature
 * needs one, so the inference and tool paths never wait on the session store. An RPC that declares no
 * access is refused.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { Access } from "../../gen/gw/api/v1/access_pb.js";
import { ERROR_TYPE_HEADER } from "../errors.js";
import { accessOf, methodName } from "./access.js";
import { bearerToken, type AdminAuth } from "./admin-auth.js";
import type { IdpTokens } from "./sso/idp-tokens.js";
import type { SsoLogin } from "./sso/sso-login.js";
import { kAdmin, type AdminPrincipal } from "./context.js";

/** Creates the interceptor over what it needs of admin auth. */
export function authInterceptor(
  auth: Pick<AdminAuth, "enabled" | "authenticate">,
  idp?: Pick<IdpTokens, "claimsIssuer" | "verify">,
  sso?: Pick<SsoLogin, "signedIn">,
): Interceptor {
  /** The admin behind an IdP bearer token; a signed-in user who is not listed as an admin is refused. */
  async function ssoAdmin(token: string): Promise<AdminPrincipal | null> {
    const { user } = await (idp as Pick<IdpTokens, "verify">).verify(token);
    // With admin auth off the admin API is open to everyone, signed in or not.
    if (!user.admin && !auth.enabled) return null;
    if (!user.admin) {
      throw new ConnectError(
        `signed-in user "${user.name}" is not an admin of this gateway: list their email in sso.admin_emails or a group of theirs in sso.admin_groups`,
        Code.PermissionDenied,
        new Headers({ [ERROR_TYPE_HEADER]: "admin_role_required" }),
      );
    }
    return { username: user.name, idpToken: token };
  }

  /** The admin behind an SSO browser session (gw_session cookie), or null for none or a user who is not an admin. */
  function sessionAdmin(cookie: string | null): AdminPrincipal | null {
    const signedIn = sso?.signedIn(cookie) ?? null;
    if (signedIn === null || !signedIn.user.admin) return null;
    return { username: signedIn.user.name, ...(signedIn.token !== null ? { idpToken: signedIn.token } : {}) };
  }

  return (next) => async (req) => {
    switch (accessOf(req.method)) {
      case Access.PUBLIC:
      case Access.CALLER:
        return next(req);
      case Access.ADMIN: {
        const token = bearerToken(req.header.get("authorization"));
        const principal =
          token !== null && idp?.claimsIssuer(token) ? await ssoAdmin(token) : ((await auth.authenticate(req.header.get("authorization"))) ?? sessionAdmin(req.header.get("cookie")));
        if (auth.enabled && principal === null) {
          throw new ConnectError(
            "admin session required: sign in with POST /api/session/login and send Authorization: Bearer <token>",
            Code.Unauthenticated,
            new Headers({ [ERROR_TYPE_HEADER]: "admin_session_required" }),
          );
        }
        req.contextValues.set(kAdmin, principal);
        return next(req);
      }
      default:
        throw new ConnectError(
          `${methodName(req.method)} declares no access (the (gw.api.v1.access) method option), so nobody may call it`,
          Code.PermissionDenied,
          new Headers({ [ERROR_TYPE_HEADER]: "access_undeclared" }),
        );
    }
  };
}
