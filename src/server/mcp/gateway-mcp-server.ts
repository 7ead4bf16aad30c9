/**
 * The MCP server one /mcp session talks to (the SDK's Server class): tools/list answers the caller's
 * visible tools, tools/call runs one through the MCP runtime. Tool failures are `isError` results; a
 * missing per-user credential also sends a URL-mode elicitation when the client supports it. Prompts,
 * resources, completion and logging are relayed to the caller's clients (aggregate-relay.ts).
 */
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { CallOutcome, McpCaller, McpServerTools } from "../../services/mcp-server-tools.js";
import type { MemberSetDeps } from "../../mcp/relay/member-set.js";
import type { Logger } from "../../telemetry/logger.js";
import { AGGREGATED_CAPABILITIES, AggregateRelay } from "./aggregate-relay.js";

/** What a session's server needs. */
export interface GatewayMcpServerDeps {
  tools: McpServerTools;
  logger: Logger;
  version: string;
  /** The caller of a JSON-RPC request of this session. */
  callerOf(requestId: RequestId): McpCaller;
  /** Called with the list a tools/list answered, so change notifications compare against what the client saw. */
  listed(tools: readonly unknown[]): void;
  /** The clients behind the session's prompts, resources, completion and logging, read on first use. */
  aggregate(): Pick<MemberSetDeps, "members" | "callerOf">;
}

/** Said to clients at initialize. */
const INSTRUCTIONS =
  "The gateway's MCP servers together, those your virtual key may use: tools and prompts named <client>-<name>, resources and resource templates under their own URIs (each with _meta[\"gw/client\"]). /mcp/<client> serves one server under its own names.";

/**
 * A request schema that accepts any params of `method`: the SDK would answer params its own schema rejects
 * with -32603 (internal error); the handlers check them with `paramsOf` and answer -32602 instead.
 */
function anyParams<M extends string>(method: M) {
  return z.object({ method: z.literal(method), params: z.unknown().optional() }).passthrough();
}

/** The request checked against the SDK's schema; bad params are a -32602 naming the problem. */
function paramsOf<T>(schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: unknown } }, request: unknown): T {
  const parsed = schema.safeParse(request);
  if (!parsed.success) throw new McpError(ErrorCode.InvalidParams, `Invalid params: ${parsed.error instanceof Error ? parsed.error.message : String(parsed.error)}`);
  return parsed.data;
}

/** Builds the server of one session. */
export function createGatewayMcpServer(deps: GatewayMcpServerDeps): Server {
  const server = new Server({ name: "gw", version: deps.version }, { capabilities: { tools: { listChanged: true }, ...AGGREGATED_CAPABILITIES }, instructions: INSTRUCTIONS });
  const relay = new AggregateRelay(server, deps.logger, deps.aggregate);
  relay.install();
  server.onclose = () => void relay.close();

  // callerOf comes first in each handler: it also forgets the request's entry, whatever happens next.
  server.setRequestHandler(anyParams("tools/list"), (raw, extra) => {
    const caller = deps.callerOf(extra.requestId);
    paramsOf(ListToolsRequestSchema, raw);
    const tools = deps.tools.list(caller);
    deps.listed(tools);
    return { tools: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: { type: "object", ...tool.inputSchema } })) };
  });

  server.setRequestHandler(anyParams("tools/call"), async (raw, extra) => {
    const caller = deps.callerOf(extra.requestId);
    const request = paramsOf(CallToolRequestSchema, raw);
    const outcome = await deps.tools.call(caller, request.params.name, request.params.arguments ?? {}, { signal: extra.signal });
    if (outcome.authRequired !== null && outcome.authRequired.kind === "headers" && server.getClientCapabilities()?.elicitation?.url) {
      const payload = outcome.authRequired;
      // Not awaited: the user finishes the flow in a browser, then calls the tool again.
      server
        .elicitInput({ mode: "url", message: payload.message, url: payload.submit_url, elicitationId: randomUUID() }, { relatedRequestId: extra.requestId })
        .catch((err: unknown) => deps.logger.debug({ err }, "the MCP client did not answer the credential elicitation"));
    }
    return callResult(outcome);
  });

  return server;
}

/** The MCP result of a call: the upstream content as received when the tool ran, else the text. */
function callResult(outcome: CallOutcome): CallToolResult {
  const raw = outcome.raw as { content?: unknown } | null;
  if (raw !== null && typeof raw === "object" && Array.isArray(raw.content)) {
    return { content: raw.content as CallToolResult["content"], isError: outcome.isError };
  }
  return { content: [{ type: "text", text: outcome.text }], isError: outcome.isError };
}
