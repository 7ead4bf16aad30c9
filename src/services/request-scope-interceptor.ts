/**
 * Puts each RPC's request scope (dimension values, origin, span) on its context, read from the RPC's own headers:
 * the REST bridge forwards the client's x-gw-dim-* headers and its Host (as x-forwarded-host), and a
 * direct Connect or gRPC call carries its own. The HTTP handler already refused bad dimension headers.
 */
import type { Interceptor } from "@connectrpc/connect";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { originOfHeaders } from "../mcp/credentials/index.js";
import { readDimensions, NO_DIMENSIONS } from "../telemetry/dimensions.js";
import { filedTrace, TRACE_REF_HEADER } from "../telemetry/trace-handoff.js";
import { kRequestScope } from "./context.js";

/** The placeholder host of the in-process transport the REST bridge calls through: no address anyone can reach. */
const IN_PROCESS_HOST = "in-memory";

/** The origin of the URL a call was made to, or null. */
function originOfUrl(url: string): string | null {
  try {
    const parsed = new URL(url);
    if (parsed.hostname === IN_PROCESS_HOST) return null;
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.origin : null;
  } catch {
    return null;
  }
}

/** Creates the interceptor; the configured custom labels are read per call, so PATCH /config applies at once. */
export function requestScopeInterceptor(settings: RuntimeSettings): Interceptor {
  return (next) => async (req) => {
    const bag: Record<string, string> = {};
    req.header.forEach((value, name) => {
      bag[name] = value;
    });
    let dims = NO_DIMENSIONS;
    try {
      dims = readDimensions(bag, settings.client.prometheusLabels);
    } catch {
      // Only reachable for calls that bypassed the HTTP handler's check; such a call simply gets no dimensions.
    }
    // gRPC over HTTP/2 carries the host only as :authority, which is not among the headers; the request URL has it.
    const trace = filedTrace(req.header.get(TRACE_REF_HEADER));
    req.contextValues.set(kRequestScope, { dims, origin: originOfHeaders(bag) ?? originOfUrl(req.url), ...(trace !== undefined ? { trace } : {}) });
    return next(req);
  };
}
