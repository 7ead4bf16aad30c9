/**
 * Tool injection for agent mode: the MCP tools an inference request sees (the caller's visible tools, see
 * tool-visibility.ts), and how they are written into a chat completions, Responses or Anthropic Messages
 * request next to the tools the request already carries.
 */
import { GatewayError } from "../../errors.js";
import { META_TOOLS } from "../../mcp/code-mode/meta-tools.js";
import type { OfferedTool } from "../../mcp/runtime.js";
import type { JsonObject } from "../../providers/types.js";
import { visibleTools, type ToolScope } from "./tool-visibility.js";

/** A tool injected into one request, and whether the gateway runs it on its own. */
export interface InjectedTool {
  /** `<client>-<tool>`, the name the model calls. */
  name: string;
  clientName: string;
  description: string;
  parameters: Record<string, unknown>;
  autoExecute: boolean;
}

/** The tools one caller is offered. */
export interface CallerTools {
  /** What the model is given: the visible tools of ordinary clients, then the code-mode meta-tools if any. */
  tools: InjectedTool[];
  /** The visible tools of code-mode clients, reached only through the meta-tools. */
  codeMode: OfferedTool[];
}

/**
 * The offered tools the caller of `scope` sees, each marked auto-executable or not; the tools of code-mode
 * clients give way to the meta-tools, offered once (the read-only ones auto-executable; executeToolCode
 * is decided per call from its code).
 */
export function toolsForCaller(offered: readonly OfferedTool[], scope: ToolScope): CallerTools {
  const visible = visibleTools(offered, scope);
  const codeMode = visible.filter((offer) => offer.codeMode);
  const tools: InjectedTool[] = visible
    .filter((offer) => !offer.codeMode)
    .map((offer) => ({
      name: offer.name,
      clientName: offer.clientName,
      description: offer.tool.description,
      parameters: offer.tool.inputSchema,
      autoExecute: offer.autoExecute,
    }));
  if (codeMode.length > 0) {
    for (const meta of META_TOOLS) tools.push({ name: meta.name, clientName: "", description: meta.description, parameters: meta.inputSchema, autoExecute: meta.readOnly });
  }
  return { tools, codeMode };
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
