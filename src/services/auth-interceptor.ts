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
import type { AdminAuth } from "./admin-auth.js";
import { kAdmin } from "./context.js";

/** Creates the interceptor over what it needs of admin auth. */
export function authInterceptor(auth: Pick<AdminAuth, "enabled" | "authenticate">): Interceptor {
  return (next) => async (req) => {
    switch (accessOf(req.method)) {
      case Access.PUBLIC:
      case Access.CALLER:
        return next(req);
      case Access.ADMIN: {
        const principal = await auth.authenticate(req.header.get("authorization"));
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
