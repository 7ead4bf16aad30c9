/**
 * One downstream session of /mcp/<client> (or of a virtual server with one member), relayed at the
 * JSON-RPC level to one upstream (relay-member.ts): the SDK's Protocol on each side keeps its own request
 * ids. Results, content blocks, `_meta` and errors pass unchanged; only tools/list and tools/call are
 * filtered by what the caller may use, and a virtual server's member may leave out the upstream's
 * resources or prompts. A server-to-client request goes to this session's client, tied to the request it
 * came during, bounded in number and in time.
 */
import type { NotificationOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  McpError,
  ErrorCode,
  type ClientCapabilities,
  type InitializeResult,
  type JSONRPCRequest,
  type Notification,
  type Request,
  type RequestId,
  type Result,
  type ServerCapabilities,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../telemetry/logger.js";
import type { McpErrorType } from "../../telemetry/metrics.js";
import type { DiscoveredTool } from "../discover.js";
import { RelayedDownstream, type RelayExtra, type RelayOperation } from "./downstream-session.js";
import { RelayMember } from "./relay-member.js";
import type { DownstreamSink, UpstreamFacts, UpstreamLink } from "./upstream-link.js";

/** The caller of one tools/list or tools/call, as the relay needs it. */
export interface RelayCaller {
  /** Whether the caller may see and call the tool (tools_to_execute, the key's mcp_configs, the include headers, a virtual server's member). */
  toolVisible(tool: string): boolean;
  /** Starts measuring one relayed request, its JSON-RPC method and, for tools/call, the tool ("" otherwise): its metric sample and, when the request is traced, its span. */
  begin(method: string, tool: string): RelayOperation;
}

/** Which of the upstream's resources and prompts the session offers (all of them on /mcp/<client>). */
export interface RelayOffers {
  resources: boolean;
  prompts: boolean;
}

/** What a session needs from the gateway. */
export interface RelaySessionDeps {
  clientName: string;
  logger: Logger;
  /** Opens this session's way to the upstream, declaring `capabilities`; throws when a per-user credential is missing. */
  connect(sink: DownstreamSink, capabilities: ClientCapabilities): Promise<UpstreamLink>;
  /** The caller of a tools/list or tools/call of this session. */
  callerOf(requestId: RequestId): RelayCaller;
  /** The client's last discovered tools, listed while the caller has no credential. */
  cachedTools(): readonly DiscoveredTool[];
  /** What the upstream last answered at initialize, announced while the caller has no credential. */
  knownFacts(): UpstreamFacts | undefined;
  /** The bound of one relayed request, not counting time spent waiting on this session's client. */
  requestTimeoutMs(): number;
  /** How long a server-to-client request waits for this session's client (client.mcp_relay_request_timeout). */
  serverRequestTimeoutMs(): number;
  /** Why the client refuses calls now; null while it takes them. */
  refusal(): string | null;
  /** What a virtual server's member offers now; absent: everything. */
  offers?: () => RelayOffers;
  /** Runs once when the session ends, whatever ended it. */
  onClose(): void;
}

const EVERYTHING: RelayOffers = { resources: true, prompts: true };
const OFFERS_EVERYTHING = (): RelayOffers => EVERYTHING;

/** The request as sent on: its method and params, without the id of this side. */
function outgoing(request: JSONRPCRequest): Request {
  return request.params === undefined ? { method: request.method } : { method: request.method, params: request.params };
}

/** Which part of the surface a method or notification belongs to, when it is one a member may leave out. */
function partOf(method: string, params: Record<string, unknown> | undefined): keyof RelayOffers | null {
  if (method.startsWith("resources/") || method.startsWith("notifications/resources/")) return "resources";
  if (method.startsWith("prompts/") || method.startsWith("notifications/prompts/")) return "prompts";
  if (method === "completion/complete") {
    const ref = (params?.["ref"] as { type?: unknown } | undefined)?.type;
    return ref === "ref/prompt" ? "prompts" : ref === "ref/resource" ? "resources" : null;
  }
  return null;
}

/**
 * The upstream's capabilities without the parts left out (completions go with the last of the two). Tools
 * always announce list changes: what a caller may list changes with its key and the gateway's settings too.
 */
function offeredCapabilities(capabilities: ServerCapabilities, offers: RelayOffers): ServerCapabilities {
  const { resources, prompts, completions, tools, ...rest } = capabilities;
  return {
    ...rest,
    ...(tools !== undefined ? { tools: { ...tools, listChanged: true } } : {}),
    ...(offers.resources && resources !== undefined ? { resources } : {}),
    ...(offers.prompts && prompts !== undefined ? { prompts } : {}),
    ...((offers.resources || offers.prompts) && completions !== undefined ? { completions } : {}),
  };
}

/** One relayed session. */
export class RelaySession extends RelayedDownstream {
  private readonly member: RelayMember;
  private readonly offers: () => RelayOffers;

  constructor(private readonly deps: RelaySessionDeps) {
    super(deps.logger, { client: deps.clientName }, "MCP relay session", deps.onClose);
    this.offers = deps.offers ?? OFFERS_EVERYTHING;
    this.member = new RelayMember({ clientName: deps.clientName, logger: deps.logger, connect: deps.connect, knownFacts: deps.knownFacts, requestTimeoutMs: deps.requestTimeoutMs, serverRequestTimeoutMs: deps.serverRequestTimeoutMs, refusal: deps.refusal }, this);
  }

  get requestsInFlight(): number {
    return this.member.requestsInFlight;
  }

  abandon(requestIds: readonly RequestId[]): void {
    this.member.abandon(requestIds);
  }

  protected onRequest(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
    const part = partOf(request.method, request.params);
    if (part !== null && !this.offers()[part]) {
      return Promise.reject(new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method} (this virtual MCP server does not offer the ${part} of MCP client "${this.deps.clientName}")`));
    }
    switch (request.method) {
      case "initialize":
        return this.initialize(request);
      case "tools/list":
        return this.listTools(request, extra);
      case "tools/call":
        return this.callTool(request, extra);
      case "ping":
        if (!this.member.linked) return Promise.resolve({});
        return this.member.relay(outgoing(request), extra);
      default:
        return this.measured(request, extra);
    }
  }

  /** Relays a request and measures it under its method. */
  private async measured(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
    const operation = this.deps.callerOf(extra.requestId).begin(request.method, "");
    let errorType: McpErrorType = "_OTHER";
    try {
      const result = await this.member.relay(outgoing(request), extra);
      errorType = "";
      return result;
    } finally {
      operation.end(errorType);
    }
  }

  protected async onNotification(notification: Notification): Promise<void> {
    if (notification.method === "notifications/initialized") return;
    await this.member.notify(notification);
  }

  private async initialize(request: JSONRPCRequest): Promise<InitializeResult> {
    this.initializing(request);
    try {
      await this.member.open();
    } catch (err) {
      this.failedToInitialize = true;
      throw err;
    }
    const facts = this.member.facts;
    return this.initialized(request, offeredCapabilities(facts.capabilities, this.offers()), facts.serverInfo, facts.instructions);
  }

  private async listTools(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
    const caller = this.deps.callerOf(extra.requestId);
    if (this.member.credentialMissing !== undefined) {
      // Without a credential the tools are listed from the last discovery: the flow starts at the call.
      const tools = this.deps.cachedTools().filter((tool) => caller.toolVisible(tool.name));
      return { tools: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: { type: "object", ...tool.inputSchema } })) };
    }
    const result = await this.member.relay(outgoing(request), extra);
    const tools = (result as { tools?: unknown }).tools;
    if (!Array.isArray(tools)) return result;
    return { ...result, tools: tools.filter((tool: { name?: unknown }) => typeof tool?.name === "string" && caller.toolVisible(tool.name)) };
  }

  private async callTool(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
    const caller = this.deps.callerOf(extra.requestId);
    const name = request.params?.["name"];
    if (typeof name !== "string") throw new McpError(ErrorCode.InvalidParams, "Invalid params: tools/call needs params.name, the name of a tool");
    if (!caller.toolVisible(name)) {
      return { content: [{ type: "text", text: `Error: tool "${name}" is not available: no tool of that name is visible to this caller (tools/list shows the ones that are)` }], isError: true };
    }
    return this.callAt(this.member, outgoing(request), extra, caller.begin("tools/call", name), this.deps.serverRequestTimeoutMs());
  }

  async tell(_member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void> {
    if (this.closed) return;
    const part = partOf(notification.method, notification.params);
    if (part !== null && !this.offers()[part]) return;
    await this.protocol.notification(notification, options);
  }

  protected stopMembers(): void {
    this.member.stop();
  }

  protected closeMembers(): Promise<void> {
    return this.member.close();
  }
}
