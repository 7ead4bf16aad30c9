/** Values interceptors put on every call's context for the services to read. */
import { createContextKey } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { NO_DIMENSIONS, type RequestDimensions } from "../telemetry/dimensions.js";
import type { TraceNode } from "../telemetry/tracing.js";

/** The unit of work of this call: a fresh EntityManager fork, set by the store interceptor. */
export const kEntityManager = createContextKey<EntityManager | undefined>(undefined, { description: "entity manager" });

/** The signed-in admin, when the call carries a valid session token. */
export interface AdminPrincipal {
  username: string;
  /** For an admin signed in through SSO: their IdP access token (memory only), which verify-exchange exchanges. */
  idpToken?: string;
}

/** Set by the auth interceptor on every ACCESS_ADMIN call: the admin behind the call, or null (auth disabled). */
export const kAdmin = createContextKey<AdminPrincipal | null>(null, { description: "admin principal" });

/** What the HTTP layer read once from a request, passed to the services explicitly (no AsyncLocalStorage). */
export interface RequestScope {
  /** The request's dimension headers. */
  dims: RequestDimensions;
  /** The origin (scheme://host) the request came in by, or null. */
  origin: string | null;
  /** The span the request's work hangs under; absent when tracing is off or the request is not sampled. */
  trace?: TraceNode;
}

/** The request scope of a call; calls that did not come through the HTTP handler get no dimensions and no origin. */
export const kRequestScope = createContextKey<RequestScope>({ dims: NO_DIMENSIONS, origin: null }, { description: "request scope" });
