/**
 * One downstream session of /mcp/<client> (or of a virtual server with one member), relayed at the
 * JSON-RPC level to one upstream (relay-member.ts): the SDK's Protocol on each side keeps its own request
 * ids. Results, content blocks, `_meta` and errors pass unchanged; only tools/list and tools/call are
 * filtered by what the caller may use, and a virtual server's member may leave out the upstream's
 * resources or prompts. A server-to-client request goes to this session's client, tied to the request it
 * came during, bounded in number and in time.
 */
import type { NotificationOptions, RequestHandlerExtra, RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  LATEST_PROTOCOL_VERSION,
  McpError,
  ErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
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
import { ANY_RESULT } from "./any-result.js";
import { credentialResult } from "./credential-result.js";
import { DownstreamProtocol, announceListChanges, type DownstreamSession } from "./downstream-protocol.js";
import { RelayMember, type DownstreamSide } from "./relay-member.js";
import type { DownstreamSink, UpstreamFacts, UpstreamLink } from "./upstream-link.js";

/** The caller of one tools/list or tools/call, as the relay needs it. */
export interface RelayCaller {
  /** Whether the caller may see and call the tool (tools_to_execute, the key's mcp_configs, the include headers, a virtual server's member). */
  toolVisible(tool: string): boolean;
  /** Starts measuring one relayed request, its JSON-RPC method and, for tools/call, the tool ("" otherwise): its metric sample and, when the request is traced, its span. */
  begin(method: string, tool: string): RelayOperation;
}

/** One relayed request being measured. */
export interface RelayOperation {
  /** Records its end: "" for success, else why it failed. */
  end(errorType: McpErrorType): void;
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
  /** What a virtual server's member offers now; absent: everything. */
  offers?: () => RelayOffers;
  /** Runs once when the session ends, whatever ended it. */
  onClose(): void;
}

type Extra = RequestHandlerExtra<Request, Notification>;

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
export class RelaySession implements DownstreamSession, DownstreamSide {
  private readonly protocol = new DownstreamProtocol();
  private readonly member: RelayMember;
  private readonly offers: () => RelayOffers;
  clientCapabilities: ClientCapabilities | undefined;
  pending = 0;
  private closed = false;
  failedToInitialize = false;
  /** What initialize answered: the list_changed notifications the session may send. */
  private announced: ServerCapabilities | undefined;

  constructor(private readonly deps: RelaySessionDeps) {
    this.offers = deps.offers ?? OFFERS_EVERYTHING;
    this.member = new RelayMember({ clientName: deps.clientName, logger: deps.logger, connect: deps.connect, knownFacts: deps.knownFacts, requestTimeoutMs: deps.requestTimeoutMs, serverRequestTimeoutMs: deps.serverRequestTimeoutMs }, this);
    // ping is the upstream's to answer, like every other request.
    this.protocol.removeRequestHandler("ping");
    this.protocol.fallbackRequestHandler = (request, extra) => this.onRequest(request, extra);
    this.protocol.fallbackNotificationHandler = (notification) => this.onNotification(notification);
    this.protocol.onclose = () => void this.close();
    this.protocol.onerror = (err) => deps.logger.debug({ err, client: deps.clientName }, "MCP relay session: protocol error");
  }

  connect(transport: Transport): Promise<void> {
    return this.protocol.connect(transport);
  }

  get requestsInFlight(): number {
    return this.member.requestsInFlight;
  }

  abandon(requestIds: readonly RequestId[]): void {
    this.member.abandon(requestIds);
  }

  private onRequest(request: JSONRPCRequest, extra: Extra): Promise<Result> {
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
  private async measured(request: JSONRPCRequest, extra: Extra): Promise<Result> {
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

  private async onNotification(notification: Notification): Promise<void> {
    if (notification.method === "notifications/initialized") return;
    await this.member.notify(notification);
  }

  private async initialize(request: JSONRPCRequest): Promise<InitializeResult> {
    const params = request.params ?? {};
    this.clientCapabilities = params["capabilities"] as ClientCapabilities | undefined;
    try {
      await this.member.open();
    } catch (err) {
      this.failedToInitialize = true;
      throw err;
    }
    const facts = this.member.facts;
    const requested = params["protocolVersion"];
    this.announced = offeredCapabilities(facts.capabilities, this.offers());
    return {
      protocolVersion: typeof requested === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      capabilities: this.announced,
      serverInfo: facts.serverInfo,
      ...(facts.instructions !== undefined ? { instructions: facts.instructions } : {}),
    };
  }

  private async listTools(request: JSONRPCRequest, extra: Extra): Promise<Result> {
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

  private async callTool(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const caller = this.deps.callerOf(extra.requestId);
    const name = request.params?.["name"];
    if (typeof name !== "string") throw new McpError(ErrorCode.InvalidParams, "Invalid params: tools/call needs params.name, the name of a tool");
    if (!caller.toolVisible(name)) {
      return { content: [{ type: "text", text: `Error: tool "${name}" is not available: no tool of that name is visible to this caller (tools/list shows the ones that are)` }], isError: true };
    }
    const operation = caller.begin("tools/call", name);
    let errorType: McpErrorType = "_OTHER";
    try {
      if (!this.member.linked) await this.member.open();
      const missing = this.member.credentialMissing;
      if (missing !== undefined) {
        errorType = "auth_required";
        return credentialResult(missing, extra.requestId, { protocol: this.protocol, capabilities: this.clientCapabilities, logger: this.deps.logger, timeoutMs: this.deps.serverRequestTimeoutMs() });
      }
      const result = await this.member.relay(outgoing(request), extra);
      if ((result as { isError?: unknown }).isError !== true) errorType = "";
      return result;
    } finally {
      operation.end(errorType);
    }
  }

  async ask(request: Request, options: RequestOptions): Promise<Result> {
    return (await this.protocol.request(request, ANY_RESULT, options)) as Result;
  }

  async tell(_member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void> {
    if (this.closed) return;
    const part = partOf(notification.method, notification.params);
    if (part !== null && !this.offers()[part]) return;
    await this.protocol.notification(notification, options);
  }

  listsChanged(all: boolean): void {
    if (this.closed || this.announced === undefined) return;
    announceListChanges(this.protocol, this.announced, all, this.deps.logger);
  }

  lost(_member: RelayMember, err: Error): void {
    this.deps.logger.info({ client: this.deps.clientName, err: err.message }, "MCP relay: the upstream session ended; closing the client's session");
    void this.close();
  }

  /** Ends the session: requests in flight are cancelled upstream, the upstream session (or this session's share) is closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.member.stop();
    await this.protocol.close().catch(() => undefined);
    await this.member.close();
    this.deps.onClose();
  }
}
