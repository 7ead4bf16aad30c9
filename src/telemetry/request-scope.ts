/** What the HTTP layer reads once from a request for everything after it: dimensions and span; an RPC adds its origin. */
import type { RequestDimensions } from "./dimensions.js";
import type { TraceNode } from "./tracing.js";

/** What the HTTP layer read once from a request, passed to the services explicitly (no AsyncLocalStorage). */
export interface RequestScope {
  /** The request's dimension headers. */
  dims: RequestDimensions;
  /** The span the request's work hangs under; absent when tracing is off or the request is not sampled. */
  trace?: TraceNode;
}

/**
 * An RPC's scope: its request scope and the origin (scheme://host) it came in by, or null, which links the
 * RPC hands out point back at. An inference request has none: only an auto-executed tool call needs its
 * origin, and reads it from the request's headers then.
 */
export interface RpcScope extends RequestScope {
  origin: string | null;
}
