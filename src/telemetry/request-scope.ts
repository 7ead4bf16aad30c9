/** What the HTTP layer reads once from a request for everything after it: dimensions, origin and span. */
import type { RequestDimensions } from "./dimensions.js";
import type { TraceNode } from "./tracing.js";

/** What the HTTP layer read once from a request, passed to the services explicitly (no AsyncLocalStorage). */
export interface RequestScope {
  /** The request's dimension headers. */
  dims: RequestDimensions;
  /** The origin (scheme://host) the request came in by, or null. */
  origin: string | null;
  /** The span the request's work hangs under; absent when tracing is off or the request is not sampled. */
  trace?: TraceNode;
}
