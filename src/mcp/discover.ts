/**
 * One-shot tool discovery: connect, list every page of tools, close. Used for the one-time upstream
 * verify of per_user_headers clients (create with user_headers, verify-headers).
 */
import { createLogger } from "../telemetry/logger.js";
import type { ConnectionType } from "./client-spec.js";
import { createSessionFactory, type DiscoveredTool } from "./upstream-session.js";

export type { DiscoveredTool } from "./upstream-session.js";
export { upstreamMessage } from "./upstream-errors.js";

/** Where to discover: an http or sse MCP endpoint. */
export interface RemoteTarget {
  connectionType: Exclude<ConnectionType, "stdio">;
  connectionString: string;
}

/**
 * Connects with the given headers, lists all tools, and closes, all within `timeoutMs`. Throws a
 * GatewayError typed upstream_auth_rejected, upstream_timeout or upstream_error.
 */
export async function discoverTools(
  target: RemoteTarget,
  headers: Record<string, string>,
  options: { timeoutMs: number },
): Promise<DiscoveredTool[]> {
  const deadline = Date.now() + options.timeoutMs;
  // A private factory: a one-off verify should not hold pooled connections afterwards.
  const factory = createSessionFactory({ logger: createLogger({ level: "silent" }) });
  try {
    const session = await factory.open(
      { connectionType: target.connectionType, connectionString: target.connectionString, stdioConfig: null, headers },
      { timeoutMs: options.timeoutMs },
    );
    try {
      return await session.listTools({ timeoutMs: Math.max(1, deadline - Date.now()) });
    } finally {
      await session.close();
    }
  } finally {
    await factory.close();
  }
}
