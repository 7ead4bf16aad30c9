/** What the HTTP layer reads once from a request for everything after it: dimensions, origin and span. */
import type { RequestDimensions } from "./dimensions.js";
import type { TraceNode } from "./tracing.js";

/** What the HTTP layer read once from a request, passed to the services explicitly (no AsyncLocalStorage). */
export interface RequestScope {
  /** The request's dimension headers. */
  dims: RequestDimensions;
  /**
   * The origin (scheme://host) the request came in by, or null. Absent on an inference request: only an
   * auto-executed tool call needs it, and reads it from the request's headers then.
   */
  origin?: string | null;
  /** The span the request's work hangs under; absent when tracing is off or the request is not sampled. */
  trace?: TraceNode;
}
