/**
 * The syntax of the settings that guard and shape the gateway's own MCP endpoint: client.allowed_hosts,
 * client.allowed_origins and client.mcp_server_auth_mode. One rule for the config file and PATCH /config.
 */

/** A DNS name or an IPv4 address, or an IPv6 address in brackets; no port, no scheme. */
const HOST_NAME = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const BRACKETED_IPV6 = /^\[[0-9A-Fa-f:.]+\]$/;

/** Why `entry` cannot be an allowed_hosts entry, or null when it can. */
export function allowedHostProblem(entry: string): string | null {
  if (HOST_NAME.test(entry) || BRACKETED_IPV6.test(entry)) return null;
  return `"${entry}" is not a host name: give the name alone, without scheme or port (such as "gw.example.com")`;
}

/** Why `entry` cannot be an allowed_origins entry, or null when it can. */
export function allowedOriginProblem(entry: string): string | null {
  let origin: string | null = null;
  try {
    const url = new URL(entry);
    if (url.protocol === "http:" || url.protocol === "https:") origin = url.origin;
  } catch {
    origin = null;
  }
  if (origin !== null && origin === entry.toLowerCase()) return null;
  return `"${entry}" is not an origin: write scheme://host[:port] with no path or trailing slash (such as "https://app.example.com")`;
}

/** The values of client.mcp_server_auth_mode. */
export const MCP_SERVER_AUTH_MODES = ["headers", "both", "oauth"] as const;

/** How /mcp callers authenticate: caller headers, OAuth access tokens, or either. */
export type McpServerAuthMode = (typeof MCP_SERVER_AUTH_MODES)[number];

/** Why `mode` cannot be client.mcp_server_auth_mode, or null when it can ("" means the default, headers). */
export function mcpServerAuthModeProblem(mode: string): string | null {
  if (mode === "" || (MCP_SERVER_AUTH_MODES as readonly string[]).includes(mode)) return null;
  return `must be "headers", "both" or "oauth", got "${mode}"`;
}

/** A checked mode ("" is headers). */
export function mcpServerAuthModeOf(mode: string): McpServerAuthMode {
  return mode === "both" || mode === "oauth" ? mode : "headers";
}
