/**
 * DNS-rebinding protection for every path: bound to a loopback address, the gateway answers only requests
 * whose Host is localhost, 127.0.0.1 or [::1] (any port) or a name in client.allowed_hosts (bound
 * elsewhere, allowed_hosts applies once set). A browser Origin that is neither the gateway's own nor in
 * client.allowed_origins is refused on the admin, RPC and MCP paths; /v1 and the probes take any origin.
 */
import type { ClientSettings } from "../config/runtime-settings.js";
import { isLoopbackHost } from "./exposure.js";
import type { Req } from "./node-http.js";

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Paths a browser on another origin may call: the inference API and the probes. */
function originFree(path: string): boolean {
  return path.startsWith("/v1/") || path.startsWith("/anthropic/") || path === "/health" || path === "/ready";
}

/** The host name of a Host header without its port ("[::1]" keeps its brackets). */
function hostName(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith("[")) {
    const end = lower.indexOf("]");
    return end < 0 ? lower : lower.slice(0, end + 1);
  }
  const colon = lower.indexOf(":");
  return colon < 0 ? lower : lower.slice(0, colon);
}

/** The guard of a gateway listening on `bindHost`: returns why a request is refused, or null. */
export function createHostGuard(bindHost: string, settings: () => Pick<ClientSettings, "allowedHosts" | "allowedOrigins">): (req: Req, path: string) => string | null {
  const loopback = isLoopbackHost(bindHost);
  return (req, path) => {
    const { allowedHosts, allowedOrigins } = settings();
    const rawHost = req.headers.host ?? req.headers[":authority"];
    const host = typeof rawHost === "string" ? rawHost : undefined;
    if (host !== undefined && (loopback || allowedHosts.length > 0)) {
      const name = hostName(host);
      const allowed = (loopback && LOOPBACK_NAMES.has(name)) || allowedHosts.some((entry) => entry.toLowerCase() === name);
      if (!allowed) {
        return loopback
          ? `Host "${host}" is not allowed: the gateway listens on a loopback address and answers only localhost, 127.0.0.1 and [::1]; add the name to client.allowed_hosts to serve it (this protects against DNS rebinding)`
          : `Host "${host}" is not in client.allowed_hosts; add it there to serve it`;
      }
    }
    const origin = req.headers.origin;
    if (origin === undefined || originFree(path)) return null;
    const lower = origin.toLowerCase();
    const own = host !== undefined && (lower === `http://${host.toLowerCase()}` || lower === `https://${host.toLowerCase()}`);
    if (own || allowedOrigins.some((entry) => entry.toLowerCase() === lower)) return null;
    return `Origin "${origin}" is not allowed: browser requests are served only from the gateway's own origin or one listed in client.allowed_origins`;
  };
}
