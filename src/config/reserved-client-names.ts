/** MCP client names the gateway's own MCP paths take, shared by the config file's reader and the API's. */

/** /mcp/sse and /mcp/messages are the endpoint's legacy SSE paths, so no client may be served under them. */
export const RESERVED_CLIENT_NAMES: ReadonlySet<string> = new Set(["sse", "messages"]);

/** Why a reserved name is refused. */
export function reservedNameMessage(name: string): string {
  return `"${name}" is reserved: /mcp/${name} is the MCP endpoint's own path, so the client could not be served at /mcp/<client>; pick another name`;
}
