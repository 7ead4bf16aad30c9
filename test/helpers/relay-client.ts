/** Connects the MCP SDK's client to /mcp or /mcp/<client> over either transport, and small waits the relay tests share. */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { McpClientSpec } from "../../src/mcp/client-spec.js";
import { api } from "./app.js";
import { stdioClient } from "./mcp-specs.js";

/** The two downstream transports of /mcp/<client>. */
export type RelayTransportKind = "streamable" | "sse";

/** How to connect. */
export interface RelayConnectOptions {
  kind?: RelayTransportKind;
  headers?: Record<string, string>;
  capabilities?: ClientCapabilities;
  /** Registers the client's handlers before it connects. */
  setup?: (client: Client) => void;
}

/** A client connected to /mcp/<name>. */
export function connectRelay(app: { url: string }, name: string, options: RelayConnectOptions = {}): Promise<Client> {
  return connectMcpAt(app, `/mcp/${name}`, options);
}

/** A client connected to the MCP endpoint at `path` (/mcp or /mcp/<name>); its legacy SSE stream is `${path}/sse`. */
export async function connectMcpAt(app: { url: string }, path: string, options: RelayConnectOptions = {}): Promise<Client> {
  const client = new Client({ name: "relay-test", version: "1.0.0" }, { capabilities: options.capabilities ?? {} });
  options.setup?.(client);
  const requestInit = { headers: options.headers ?? {} };
  const transport =
    (options.kind ?? "streamable") === "streamable"
      ? new StreamableHTTPClientTransport(new URL(`${app.url}${path}`), { requestInit })
      : new SSEClientTransport(new URL(`${app.url}${path}/sse`), { requestInit });
  await client.connect(transport);
  return client;
}

/** Ends the client's session (DELETE for Streamable HTTP) and closes it. */
export async function closeRelay(client: Client): Promise<void> {
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
  await client.close();
}

/** Polls `check` until it returns a value other than undefined. */
export async function eventually<T>(what: string, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`never happened: ${what}`);
}

/** An http or sse client spec on `url` whose tools_to_execute is `callable`. */
export function remoteClient(name: string, connectionType: "http" | "sse", url: string, callable: string[]): McpClientSpec {
  return { ...stdioClient(name, "", []), connectionType, connectionString: url, stdioConfig: null, toolsToExecute: callable };
}

/** Waits until every named client is healthy. */
export async function waitHealthy(app: { url: string }, names: readonly string[]): Promise<void> {
  await eventually(`${names.join(", ")} healthy`, async () => {
    const res = await api(app, "GET", "/api/mcp/clients");
    const clients = res.body.clients as { name: string; state: string }[];
    return names.every((name) => clients.some((c) => c.name === name && c.state === "healthy")) ? true : undefined;
  });
}

/** The text parts of a result, joined. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((part) => (part.type === "text" ? (part.text ?? "") : "")).join("\n");
}
