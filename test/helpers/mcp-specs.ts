/** MCP client specs as the config file declares them, for apps that start with their clients. */
import type { McpClientSpec } from "../../src/mcp/client-spec.js";

/** A stdio client running `command args`, with every tool callable and its `envs` passed through. */
export function stdioClient(name: string, command: string, args: string[], envs: string[] = []): McpClientSpec {
  return {
    name,
    connectionType: "stdio",
    connectionString: null,
    stdioConfig: { command, args, envs },
    authType: "none",
    headers: {},
    perUserHeaderKeys: [],
    toolsToExecute: ["*"],
    toolsToAutoExecute: [],
    toolSyncInterval: 0,
    needsSessionStickiness: null,
    disabled: false,
    allowOnAllVirtualKeys: false,
    oauthConfig: null,
    isCodeModeClient: false,
  };
}
