/**
 * One-shot tool discovery: connect, list every page of tools, close. Used for the one-time upstream
 * verify of per_user_headers clients (create with user_headers, verify-headers).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { GatewayError } from "../errors.js";
import type { ConnectionType } from "./client-spec.js";

/** A tool as discovered upstream. */
export interface DiscoveredTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** Where to discover: an http or sse MCP endpoint. */
export interface RemoteTarget {
  connectionType: Exclude<ConnectionType, "stdio">;
  connectionString: string;
}

/** Collapses whitespace and caps length, as the spec asks of every upstream message we repeat. */
export function upstreamMessage(err: unknown, max = 512): string {
  const raw = err instanceof Error ? err.message : String(err);
  const collapsed = raw.replace(/\s+/g, " ").trim() || "unknown upstream error";
  return collapsed.length > max ? `${collapsed.slice(0, max - 1)}…` : collapsed;
}

function remoteTransport(target: RemoteTarget, headers: Record<string, string>): Transport {
  const url = new URL(target.connectionString);
  const requestInit: RequestInit = { headers };
  if (target.connectionType === "sse") {
    // The SSE transport's GET stream takes its headers from eventSourceInit, its POSTs from requestInit.
    return new SSEClientTransport(url, {
      requestInit,
      eventSourceInit: { fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
    });
  }
  return new StreamableHTTPClientTransport(url, { requestInit });
}

/** Connects with the given headers, lists all tools, and closes. Throws GatewayError unavailable on any failure. */
export async function discoverTools(
  target: RemoteTarget,
  headers: Record<string, string>,
  options: { timeoutMs: number },
): Promise<DiscoveredTool[]> {
  const client = new Client({ name: "gw-discovery", version: "0.1.0" }, { capabilities: {} });
  const transport = remoteTransport(target, headers);
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    await client.connect(transport, { signal, timeout: options.timeoutMs });
    const tools: DiscoveredTool[] = [];
    let cursor: string | undefined;
    // Bounded: a server that pages forever is cut off after 1000 pages.
    for (let page = 0; page < 1000; page++) {
      const result = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: options.timeoutMs });
      for (const tool of result.tools) {
        tools.push({ name: tool.name, description: tool.description ?? "", inputSchema: tool.inputSchema as Record<string, unknown> });
      }
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  } catch (err) {
    throw new GatewayError("unavailable", upstreamMessage(err), { type: "upstream_error", cause: err });
  } finally {
    await client.close().catch(() => undefined);
  }
}
