/**
 * Tool injection for agent mode: which MCP tools an inference request sees (every offered tool, narrowed
 * by the caller's virtual key and the x-gw-mcp-include-* headers), and how they are written into a chat
 * completions, Responses or Anthropic Messages request next to the tools the request already carries.
 */
import type { IncomingHttpHeaders } from "node:http";
import { GatewayError } from "../../errors.js";
import type { OfferedTool } from "../../mcp/runtime.js";
import type { JsonObject } from "../../providers/types.js";
import type { VirtualKey } from "../../routing/types.js";
import { keyAllowsTool } from "./caller.js";

/** Narrows the injected tools to these MCP client names (comma-separated, `*` for all). */
export const INCLUDE_CLIENTS_HEADER = "x-gw-mcp-include-clients";
/** Narrows the injected tools to these `<client>-<tool>` names (comma-separated, `*` for all). */
export const INCLUDE_TOOLS_HEADER = "x-gw-mcp-include-tools";

/** A tool injected into one request, and whether the gateway runs it on its own. */
export interface InjectedTool {
  /** `<client>-<tool>`, the name the model calls. */
  name: string;
  clientName: string;
  description: string;
  parameters: Record<string, unknown>;
  autoExecute: boolean;
}

/** An include header as read: absent (no narrowing), `*` (everything), or a set of names. */
export type IncludeList = null | "*" | ReadonlySet<string>;

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

function included(list: IncludeList, name: string): boolean {
  return list === null || list === "*" || list.has(name);
}

/** What narrows the tools of one request. */
export interface ToolScope {
  /** The caller's virtual key; null offers every tool (no governance). */
  key: VirtualKey | null;
  clients: IncludeList;
  tools: IncludeList;
}

/** The offered tools the caller may use, each marked auto-executable or not. */
export function toolsForCaller(offered: readonly OfferedTool[], scope: ToolScope): InjectedTool[] {
  const out: InjectedTool[] = [];
  for (const offer of offered) {
    if (scope.key !== null && !keyAllowsTool(scope.key, offer.clientName, offer.tool.name)) continue;
    if (!included(scope.clients, offer.clientName) || !included(scope.tools, offer.name)) continue;
    out.push({
      name: offer.name,
      clientName: offer.clientName,
      description: offer.tool.description,
      parameters: offer.tool.inputSchema,
      autoExecute: offer.autoExecute,
    });
  }
  return out;
}

/** The wire format a request body is in. */
export type AgentWire = "chat" | "responses" | "messages";

/** The names of the function tools a request already carries, in either wire format. */
function requestToolNames(tools: readonly unknown[], wire: AgentWire): Set<string> {
  const names = new Set<string>();
  for (const tool of tools) {
    if (tool === null || typeof tool !== "object") continue;
    const t = tool as JsonObject;
    const name = wire === "chat" ? (t["function"] as JsonObject | undefined)?.["name"] : t["name"];
    if (typeof name === "string") names.add(name);
  }
  return names;
}

/** One injected tool as a function tool of the wire format. */
function wireTool(tool: InjectedTool, wire: AgentWire): JsonObject {
  if (wire === "messages") return { name: tool.name, description: tool.description, input_schema: tool.parameters };
  if (wire === "chat") return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
  // The Responses API defaults `strict` to true, which most MCP input schemas do not satisfy.
  return { type: "function", name: tool.name, description: tool.description, parameters: tool.parameters, strict: false };
}

/**
 * The request's `tools` with the injected ones appended, and the injected tools that survived: a request
 * tool with the same name wins, so that name stays the caller's to run. Throws a 400 when `tools` is not
 * a list.
 */
export function injectTools(body: JsonObject, tools: readonly InjectedTool[], wire: AgentWire): { tools: unknown[]; injected: InjectedTool[] } {
  const own = body["tools"];
  if (own !== undefined && own !== null && !Array.isArray(own)) {
    throw new GatewayError("invalid_argument", "tools must be a list of tool objects", { type: "caller_invalid_request", httpStatus: 400, field: "tools" });
  }
  const ownTools: unknown[] = Array.isArray(own) ? own : [];
  const taken = requestToolNames(ownTools, wire);
  const injected = tools.filter((tool) => !taken.has(tool.name));
  return { tools: [...ownTools, ...injected.map((tool) => wireTool(tool, wire))], injected };
}

/**
 * tool_choice for a follow-up turn: a forced choice (`required`, or an object naming a tool) becomes
 * `auto`, so the model can answer once it has the results; an allowed_tools list keeps its tools with
 * mode `auto` (chat nests the mode under `allowed_tools`, the Responses API has it at the top).
 */
export function followUpToolChoice(choice: unknown): unknown {
  if (choice === "required") return "auto";
  if (choice === null || typeof choice !== "object" || Array.isArray(choice)) return choice;
  const object = choice as JsonObject;
  if (object["type"] !== "allowed_tools") return "auto";
  const nested = object["allowed_tools"];
  if (nested !== null && typeof nested === "object" && !Array.isArray(nested)) return { ...object, allowed_tools: { ...(nested as JsonObject), mode: "auto" } };
  return { ...object, mode: "auto" };
}
