/** Values interceptors put on every call's context for the services to read. */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { NO_DIMENSIONS } from "../telemetry/dimensions.js";
import type { RpcScope } from "../telemetry/request-scope.js";
import type { Store } from "../store/index.js";

/** The unit of work of this call, set by the store interceptor: its EntityManager, forked on first use. */
export const kEntityManager = createContextKey<(() => EntityManager) | undefined>(undefined, { description: "entity manager" });

/** The call's EntityManager (forked on its first use), or a fork of its own for a context no interceptor set up. */
export function emOf(ctx: HandlerContext, store: Store): EntityManager {
  return ctx.values.get(kEntityManager)?.() ?? store.fork();
}

/** The signed-in admin, when the call carries a valid session token. */
export interface AdminPrincipal {
  username: string;
  /** For an admin signed in through SSO: their IdP access token (memory only), which verify-exchange exchanges. */
  idpToken?: string;
}

/** Set by the auth interceptor on every ACCESS_ADMIN call: the admin behind the call, or null (auth disabled). */
export const kAdmin = createContextKey<AdminPrincipal | null>(null, { description: "admin principal" });

export type { RequestScope, RpcScope } from "../telemetry/request-scope.js";

/** The scope of an RPC; calls that did not come through the HTTP handler get no dimensions and no origin. */
export const kRequestScope = createContextKey<RpcScope>({ dims: NO_DIMENSIONS, origin: null }, { description: "request scope" });
