/**
 * One downstream session of a virtual MCP server with several members (member-set.ts routes each request
 * to its member): tools are `<client>-<tool>`, narrowed per request to what the caller may use, and a call
 * goes to that client under the tool's own name. The session speaks to its downstream client through the
 * SDK's Protocol and ends when any member's upstream session does.
 */
import type { NotificationOptions, RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
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
import { prefixedToolName, splitToolName } from "../tool-names.js";
import { ANY_RESULT } from "./any-result.js";
import { credentialResult } from "./credential-result.js";
import { DownstreamProtocol, announceListChanges, type DownstreamSession } from "./downstream-protocol.js";
import { MemberSet, stringParam, type RelayExtra, type SetMemberDeps } from "./member-set.js";
import type { DownstreamSide, RelayMember } from "./relay-member.js";
import type { RelayCaller } from "./relay-session.js";

/** What a session needs from the gateway. */
export interface VirtualRelayDeps {
  /** The virtual server's name and description, announced at initialize. */
  name: string;
  description: string;
  /** The gateway's version, announced as the server's. */
  version: string;
  logger: Logger;
  /** The members the caller may use, at least two in the server. */
  members: readonly SetMemberDeps[];
  /** The caller of a request of this session, per member: whom the tools of that client are visible to. */
  callerOf(requestId: RequestId): (client: string) => RelayCaller;
  /** Runs once when the session ends, whatever ended it. */
  onClose(): void;
}

/** One relayed session of a virtual server with several members. */
export class VirtualRelaySession implements DownstreamSession, DownstreamSide {
  private readonly protocol = new DownstreamProtocol();
  private readonly set: MemberSet;
  clientCapabilities: ClientCapabilities | undefined;
  pending = 0;
  private closed = false;
  failedToInitialize = false;
  /** What initialize answered: the list_changed notifications the session may send. */
  private announced: ServerCapabilities | undefined;

  constructor(private readonly deps: VirtualRelayDeps) {
    this.set = new MemberSet({ logFields: { virtual_server: deps.name }, logger: deps.logger, members: deps.members, callerOf: deps.callerOf }, this);
    this.protocol.removeRequestHandler("ping");
    this.protocol.fallbackRequestHandler = (request, extra) => this.onRequest(request, extra);
    this.protocol.fallbackNotificationHandler = (notification) => this.onNotification(notification);
    this.protocol.onclose = () => void this.close();
    this.protocol.onerror = (err) => deps.logger.debug({ err, virtual_server: deps.name }, "MCP virtual server session: protocol error");
  }

  connect(transport: Transport): Promise<void> {
    return this.protocol.connect(transport);
  }

  get requestsInFlight(): number {
    return this.set.requestsInFlight;
  }

  abandon(requestIds: readonly RequestId[]): void {
    this.set.abandon(requestIds);
  }

  private onRequest(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
    switch (request.method) {
      case "initialize":
        return this.initialize(request);
      case "ping":
        return Promise.resolve({});
      case "tools/list":
        return this.listTools(request, extra);
      case "tools/call":
        return this.callTool(request, extra);
      case "prompts/list":
      case "resources/list":
      case "resources/templates/list":
        return this.set.listOthers(request, extra);
      case "prompts/get":
        return this.set.getPrompt(request, extra);
      case "resources/read":
      case "resources/subscribe":
      case "resources/unsubscribe":
        return this.set.byUri(request, extra);
      case "completion/complete":
        return this.set.complete(request, extra);
      case "logging/setLevel":
        return this.set.setLevel(request, extra);
      default:
        // Reading the caller forgets the entry the endpoint kept for this request.
        this.set.callers(extra);
        return Promise.reject(new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method} is not relayed by a virtual MCP server with several members`));
    }
  }

  private async onNotification(notification: Notification): Promise<void> {
    if (notification.method === "notifications/initialized") return;
    await this.set.notifyAll(notification);
  }

  private async initialize(request: JSONRPCRequest): Promise<InitializeResult> {
    const params = request.params ?? {};
    this.clientCapabilities = params["capabilities"] as ClientCapabilities | undefined;
    await this.set.openAll();
    const requested = params["protocolVersion"];
    const instructions = [this.deps.description, ...this.set.instructions()].filter((text) => text !== "");
    this.announced = this.set.capabilities();
    return {
      protocolVersion: typeof requested === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      capabilities: this.announced,
      serverInfo: { name: this.deps.name, version: this.deps.version },
      ...(instructions.length > 0 ? { instructions: instructions.join("\n\n") } : {}),
    };
  }

  private async listTools(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
    const tools = await this.set.fromEvery(
      request,
      extra,
      this.set.callers(extra),
      () => true,
      (member, items, caller) =>
        items.filter((tool) => typeof tool["name"] === "string" && caller.toolVisible(tool["name"])).map((tool) => ({ ...tool, name: prefixedToolName(member.relay.clientName, String(tool["name"])) })),
      // Without a credential the tools are listed from the last discovery: the flow starts at the call.
      (member, caller) =>
        member.deps
          .cachedTools()
          .filter((tool) => caller.toolVisible(tool.name))
          .map((tool) => ({ name: prefixedToolName(member.relay.clientName, tool.name), description: tool.description, inputSchema: { type: "object", ...tool.inputSchema } })),
    );
    return { tools };
  }

  private async callTool(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
    const callers = this.set.callers(extra);
    const name = stringParam(request.params, "name");
    const split = splitToolName(name);
    const member = split === null ? undefined : this.set.member(split.client);
    const caller = member === undefined || split === null ? undefined : callers(split.client);
    if (member === undefined || split === null || caller === undefined || !caller.toolVisible(split.tool)) {
      return { content: [{ type: "text", text: `Error: tool "${name}" is not available: no tool of that name is visible to this caller (tools/list shows the ones that are)` }], isError: true };
    }
    const operation = caller.begin("tools/call", split.tool);
    let errorType: McpErrorType = "_OTHER";
    try {
      await member.relay.open();
      const missing = member.relay.credentialMissing;
      if (missing !== undefined) {
        errorType = "auth_required";
        return credentialResult(missing, extra.requestId, { protocol: this.protocol, capabilities: this.clientCapabilities, logger: this.deps.logger, timeoutMs: member.deps.serverRequestTimeoutMs() });
      }
      const result = await member.relay.relay({ method: request.method, params: { ...request.params, name: split.tool } }, extra);
      if ((result as { isError?: unknown }).isError !== true) errorType = "";
      return result;
    } finally {
      operation.end(errorType);
    }
  }

  async ask(request: Request, options: RequestOptions): Promise<Result> {
    return (await this.protocol.request(request, ANY_RESULT, options)) as Result;
  }

  async tell(member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void> {
    if (this.closed || !this.set.admits(member, notification)) return;
    await this.protocol.notification(notification, options);
  }

  listsChanged(all: boolean): void {
    if (this.closed || this.announced === undefined) return;
    announceListChanges(this.protocol, this.announced, all, this.deps.logger);
  }

  lost(member: RelayMember, err: Error): void {
    this.deps.logger.info({ virtual_server: this.deps.name, client: member.clientName, err: err.message }, "MCP relay: a member's upstream session ended; closing the client's session");
    void this.close();
  }

  /** Ends the session: requests in flight are cancelled upstream, every member's upstream session (or share) is closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.set.stop();
    await this.protocol.close().catch(() => undefined);
    await this.set.close();
    this.deps.onClose();
  }
}
