/** gw.admin.v1.SessionService: admin sign-in and sign-out. */
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { invalidField } from "../errors.js";
import { SessionService } from "../../gen/gw/admin/v1/session_pb.js";
import { PEER_ADDRESS_HEADER } from "../peer-address.js";
import type { AdminAuth } from "./admin-auth.js";
import { SSO_LOGIN_PATH } from "./sso/sso-login.js";

/** Creates the service implementation; `ssoEnabled` says whether an SSO issuer is configured. */
export function createSessionService(auth: AdminAuth, ssoEnabled: () => boolean = () => false): ServiceImpl<typeof SessionService> {
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
      return { status: "success" };
    },
  };
}
