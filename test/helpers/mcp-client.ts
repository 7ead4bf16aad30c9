/** Connects the MCP SDK's own client to the gateway's /mcp endpoint over either transport. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";

/** The two transports the gateway serves. */
export type McpTransportKind = "streamable" | "sse";
export const MCP_TRANSPORTS: readonly McpTransportKind[] = ["streamable", "sse"];

/** A connected client; close() ends its session. */
export async function connectMcp(
  app: { url: string },
  kind: McpTransportKind,
  headers: Record<string, string> = {},
  capabilities: ClientCapabilities = {},
): Promise<Client> {
  const client = new Client({ name: "gw-test", version: "1.0.0" }, { capabilities });
  const transport =
    kind === "streamable"
      ? new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers } })
      : new SSEClientTransport(new URL(`${app.url}/mcp/sse`), { requestInit: { headers } });
  await client.connect(transport);
  return client;
}

/** Ends the client's session: a Streamable HTTP session is deleted on the server (DELETE /mcp), an SSE stream closed. */
export async function closeMcp(client: Client): Promise<void> {
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
  await client.close();
}

/** The sorted names tools/list gives. */
export async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((t) => t.name).sort();
}

/** The text parts of a tools/call result, joined. */
export function resultText(result: unknown): string {
  const content = (result as { content?: unknown }).content;
  const parts = Array.isArray(content) ? (content as { type: string; text?: string }[]) : [];
  return parts.map((p) => (p.type === "text" ? (p.text ?? "") : "")).join("\n");
}
