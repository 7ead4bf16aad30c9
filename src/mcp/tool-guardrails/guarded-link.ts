/**
 * The tool guardrails and quarantine of one relayed session's link to its upstream (/mcp/<client> and the
 * virtual servers): a tools/list answer loses the client's quarantined tools and shows the descriptions a
 * tool_definition guardrail redacted; a tools/call of a quarantined tool fails as one that does not exist;
 * any other tools/call has its tool_input guardrails run before it is relayed and its tool_output
 * guardrails on the answer. Every other message passes untouched.
 */
import type { Request, Result } from "@modelcontextprotocol/sdk/types.js";
import type { LinkRequestOptions, UpstreamLink } from "../relay/upstream-link.js";
import { ToolCallBlocked, type ToolCallGuard } from "./tool-call-guard.js";
import { NOTHING_SCREENED, type ScreenedTools } from "./tool-screens.js";

/** What the link reads of its client, live. */
export interface LinkGuardDeps {
  /** What the client's callers may see now. */
  screened(): ScreenedTools;
  /** The guard of a call of `tool` by this session's caller, or null when no guardrail covers it. */
  guard(tool: string, signal: AbortSignal): ToolCallGuard | null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The answer to a call of a tool the caller cannot see, as the relay gives it. */
function notAvailable(name: string): Result {
  return { content: [{ type: "text", text: `Error: tool "${name}" is not available: no tool of that name is visible to this caller (tools/list shows the ones that are)` }], isError: true };
}

async function listed(link: UpstreamLink, request: Request, options: LinkRequestOptions, deps: LinkGuardDeps): Promise<Result> {
  const result = await link.request(request, options);
  const screened = deps.screened();
  const tools = (result as { tools?: unknown }).tools;
  if (screened === NOTHING_SCREENED || !Array.isArray(tools)) return result;
  const kept = tools.flatMap((tool: unknown) => {
    const name = isObject(tool) ? tool["name"] : undefined;
    if (typeof name !== "string") return [tool];
    if (screened.quarantined.has(name)) return [];
    const shown = screened.shown.get(name);
    return [shown === undefined ? tool : { ...(tool as Record<string, unknown>), description: shown.description, inputSchema: shown.inputSchema }];
  });
  return { ...result, tools: kept };
}

async function called(link: UpstreamLink, request: Request, options: LinkRequestOptions, deps: LinkGuardDeps): Promise<Result> {
  const params = request.params ?? {};
  const name = params["name"];
  if (typeof name !== "string") return link.request(request, options);
  if (deps.screened().quarantined.has(name)) return notAvailable(name);
  const guard = deps.guard(name, options.signal);
  if (guard === null) return link.request(request, options);
  const args = isObject(params["arguments"]) ? params["arguments"] : {};
  const sent = await guard.arguments(args);
  if (sent instanceof ToolCallBlocked) return sent.result();
  const result = await link.request(sent === args ? request : { ...request, params: { ...params, arguments: sent } }, options);
  const out = await guard.result(result);
  return out instanceof ToolCallBlocked ? out.result() : (out as Result);
}

/** `link` with the client's tool guardrails and quarantine applied to tools/list and tools/call. */
export function guardedLink(link: UpstreamLink, deps: LinkGuardDeps): UpstreamLink {
  return {
    get facts() {
      return link.facts;
    },
    get shared() {
      return link.shared;
    },
    request(request, options) {
      if (request.method === "tools/list") return listed(link, request, options, deps);
      if (request.method === "tools/call") return called(link, request, options, deps);
      return link.request(request, options);
    },
    notify: (notification) => link.notify(notification),
    close: () => link.close(),
  };
}
