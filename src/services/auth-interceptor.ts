/**
 * Puts the admin principal on every admin call and refuses admin calls without a session when
 * auth_config is enabled. Caller-facing services (inference, tool execution) are not looked up here,
 * so their hot path never waits on the session store.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { AdminAuth } from "./admin-auth.js";
import { ERROR_TYPE_HEADER } from "../errors.js";
import { kAdmin } from "./context.js";

/** Services that only an admin may call when auth is enabled. */
const ADMIN_SERVICES: ReadonlySet<string> = new Set([
  "gw.admin.v1.McpClientService",
  "gw.admin.v1.SettingsService",
  "gw.admin.v1.SessionService",
  "gw.routing.v1.GovernanceService",
  "gw.catalog.v1.ProviderService",
]);

/** Methods of admin services that must work without a session. */
const OPEN_METHODS: ReadonlySet<string> = new Set(["gw.admin.v1.SessionService/Login"]);

/** Services that look at the admin principal without requiring it. */
const ADMIN_AWARE_SERVICES: ReadonlySet<string> = new Set(["gw.credential.v1.CredentialService"]);

/** Creates the interceptor. */
export function authInterceptor(auth: AdminAuth): Interceptor {
  return (next) => async (req) => {
    const service = req.service.typeName;
    if (!ADMIN_SERVICES.has(service) && !ADMIN_AWARE_SERVICES.has(service)) return next(req);
    const principal = await auth.authenticate(req.header.get("authorization"));
    req.contextValues.set(kAdmin, principal);
    const open = OPEN_METHODS.has(`${service}/${req.method.name}`);
    if (auth.enabled && ADMIN_SERVICES.has(service) && !open && principal === null) {
      throw new ConnectError(
        "admin session required: sign in with POST /api/session/login and send Authorization: Bearer <token>",
        Code.Unauthenticated,
        new Headers({ [ERROR_TYPE_HEADER]: "admin_session_required" }),
      );
    }
    return next(req);
  };
}
