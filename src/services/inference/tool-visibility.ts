/**
 * Which MCP tools a caller may see and call, one rule for /mcp listing and calls, /v1 tool injection and
 * POST /v1/mcp/tool/execute: every connected client's tools_to_execute (what the runtime offers), then the
 * caller's virtual key (its mcp_configs entry for the client; a client the key does not name only when the
 * client sets allow_on_all_virtual_keys), then the x-gw-mcp-include-clients / x-gw-mcp-include-tools
 * headers. Everything here reads memory only.
 */
import type { IncomingHttpHeaders } from "node:http";
import { GatewayError } from "../../errors.js";
import type { OfferedTool } from "../../mcp/runtime.js";
import { prefixedToolName } from "../../mcp/tool-names.js";
import type { VirtualKey } from "../../routing/types.js";

/** Narrows the caller's tools to these MCP client names (comma-separated, `*` for all). */
export const INCLUDE_CLIENTS_HEADER = "x-gw-mcp-include-clients";
/** Narrows the caller's tools to these `<client>-<tool>` or `<client>-*` names (comma-separated, `*` for all). */
export const INCLUDE_TOOLS_HEADER = "x-gw-mcp-include-tools";

/** An include header as read: absent (no narrowing), `*` (everything), or a set of names. */
export type IncludeList = null | "*" | ReadonlySet<string>;

/** The two include headers of one request. */
export interface Include {
  clients: IncludeList;
  tools: IncludeList;
}

/** No include header at all. */
export const NO_INCLUDE: Include = { clients: null, tools: null };

/** What narrows the tools of one caller. */
export interface ToolScope extends Include {
  /** The caller's virtual key; null sees every offered tool. */
  key: VirtualKey | null;
}

/** A client and tool as the rule needs them. */
export interface ToolRef {
  clientName: string;
  toolName: string;
  /** The client shows its tools to keys whose mcp_configs do not name it. */
  allowOnAllVirtualKeys: boolean;
}

function headerBadRequest(header: string, message: string): GatewayError {
  return new GatewayError("invalid_argument", `${header}: ${message}`, { type: "caller_invalid_request", httpStatus: 400, field: header });
}

/**
 * Reads one include header. Repeated headers count as one comma-separated list; a blank value includes
 * nothing (like `[]` in tools_to_execute). Throws a 400 naming the header on `*` mixed with names or on a
 * name given twice.
 */
export function parseIncludeHeader(headers: IncomingHttpHeaders, header: string): IncludeList {
  const raw = headers[header];
  if (raw === undefined) return null;
  const text = Array.isArray(raw) ? raw.join(",") : raw;
  const names = text
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw headerBadRequest(header, `"${name}" is listed twice`);
    seen.add(name);
  }
  if (seen.has("*")) {
    if (seen.size > 1) throw headerBadRequest(header, `"*" cannot be mixed with names; send "*" alone or only names`);
    return "*";
  }
  return seen;
}

/** Both include headers of a request; throws the 400 of parseIncludeHeader. */
export function parseInclude(headers: IncomingHttpHeaders): Include {
  return { clients: parseIncludeHeader(headers, INCLUDE_CLIENTS_HEADER), tools: parseIncludeHeader(headers, INCLUDE_TOOLS_HEADER) };
}

/** True when the request sent either include header (an empty one counts). */
export function sentInclude(include: Include): boolean {
  return include.clients !== null || include.tools !== null;
}

/**
 * Whether a virtual key lets its callers use `tool` of a client: a key without mcp_configs narrows
 * nothing; otherwise its entry for the client decides, else the client's allow_on_all_virtual_keys.
 */
export function keyAllowsTool(key: VirtualKey, ref: ToolRef): boolean {
  if (key.mcpConfigs === null) return true;
  const config = key.mcpConfigs.find((entry) => entry.mcpClientName === ref.clientName);
  if (config === undefined) return ref.allowOnAllVirtualKeys;
  return config.toolsToExecute.includes("*") || config.toolsToExecute.includes(ref.toolName);
}

function includesTool(list: IncludeList, ref: ToolRef): boolean {
  if (list === null || list === "*") return true;
  return list.has(prefixedToolName(ref.clientName, ref.toolName)) || list.has(prefixedToolName(ref.clientName, "*"));
}

function includesClient(list: IncludeList, clientName: string): boolean {
  return list === null || list === "*" || list.has(clientName);
}

/** Whether the caller of `scope` may see and call the tool (the client's tools_to_execute is the runtime's check). */
export function toolVisible(scope: ToolScope, ref: ToolRef): boolean {
  if (scope.key !== null && !keyAllowsTool(scope.key, ref)) return false;
  return includesClient(scope.clients, ref.clientName) && includesTool(scope.tools, ref);
}

/** The offered tools the caller of `scope` sees. */
export function visibleTools(offered: readonly OfferedTool[], scope: ToolScope): OfferedTool[] {
  return offered.filter((offer) =>
    toolVisible(scope, { clientName: offer.clientName, toolName: offer.tool.name, allowOnAllVirtualKeys: offer.allowOnAllVirtualKeys }),
  );
}
