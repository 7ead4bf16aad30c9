/** gw.admin.v1.SessionService: admin sign-in and sign-out. */
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { invalidField } from "../errors.js";
import { SessionService } from "../../gen/gw/admin/v1/session_pb.js";
import { PEER_ADDRESS_HEADER } from "../peer-address.js";
import type { AdminAuth } from "./admin-auth.js";
import { sessionCookie, SSO_LOGIN_PATH, type SsoLogin } from "./sso/sso-login.js";

/**
 * Creates the service implementation; `ssoEnabled` says whether an SSO issuer is configured, and `sso` ends
 * the SSO session a signed-in browser's cookie names when it logs out.
 */
export function createSessionService(auth: AdminAuth, ssoEnabled: () => boolean = () => false, sso?: Pick<SsoLogin, "caller" | "logout">): ServiceImpl<typeof SessionService> {
  return {
    getSignInOptions() {
      const sso = ssoEnabled();
      return { password: auth.enabled, sso, ssoLoginUrl: sso ? SSO_LOGIN_PATH : "" };
    },
    async login(req, ctx) {
      if (req.username === "") throw invalidField("username", "is required");
      if (req.password === "") throw invalidField("password", "is required");
      const { token, expiresAt } = await auth.login(req.username, req.password, ctx.requestHeader.get(PEER_ADDRESS_HEADER) ?? "unknown");
      return { token, expiresAt: timestampFromDate(expiresAt) };
    },
    async logout(_req, ctx) {
      await auth.logout(ctx.requestHeader.get("authorization"));
      // A dashboard signed in through SSO carries its session as a cookie: logging out ends it on every node
      // and clears the cookie, so the browser is signed out as with POST /api/sso/logout.
      const cookie = ctx.requestHeader.get("cookie");
      if (sso !== undefined && sso.caller(cookie) !== null) {
        await sso.logout(cookie);
        ctx.responseHeader.append("set-cookie", sessionCookie("", 0, false));
      }
      return { status: "success" };
    },
  };
}
