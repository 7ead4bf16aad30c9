/**
 * One downstream session of a virtual MCP server with several members (member-set.ts routes each request
 * to its member): tools are `<client>-<tool>`, narrowed per request to what the caller may use, and a call
 * goes to that client under the tool's own name. The session speaks to its downstream client through the
 * SDK's Protocol and ends when any member's upstream session does.
 */
import type { NotificationOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { McpError, ErrorCode, type InitializeResult, type JSONRPCRequest, type Notification, type RequestId, type Result } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../telemetry/logger.js";
import { prefixedToolName, splitToolName } from "../tool-names.js";
import { RelayedDownstream, type RelayExtra } from "./downstream-session.js";
import { MemberSet, stringParam, type SetMemberDeps } from "./member-set.js";
import type { RelayMember } from "./relay-member.js";
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
export class VirtualRelaySession extends RelayedDownstream {
  private readonly set: MemberSet;

  constructor(private readonly deps: VirtualRelayDeps) {
    super(deps.logger, { virtual_server: deps.name }, "MCP virtual server session", deps.onClose);
    this.set = new MemberSet({ logFields: { virtual_server: deps.name }, logger: deps.logger, members: deps.members, callerOf: deps.callerOf }, this);
  }

  get requestsInFlight(): number {
    return this.set.requestsInFlight;
  }

  abandon(requestIds: readonly RequestId[]): void {
    this.set.abandon(requestIds);
  }

  protected onRequest(request: JSONRPCRequest, extra: RelayExtra): Promise<Result> {
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

  protected async onNotification(notification: Notification): Promise<void> {
    if (notification.method === "notifications/initialized") return;
    await this.set.notifyAll(notification);
  }

  private async initialize(request: JSONRPCRequest): Promise<InitializeResult> {
    this.initializing(request);
    await this.set.openAll();
    const instructions = [this.deps.description, ...this.set.instructions()].filter((text) => text !== "");
    return this.initialized(request, this.set.capabilities(), { name: this.deps.name, version: this.deps.version }, instructions.length > 0 ? instructions.join("\n\n") : undefined);
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
    const call = { method: request.method, params: { ...request.params, name: split.tool } };
    return this.callAt(member.relay, call, extra, caller.begin("tools/call", split.tool), member.deps.serverRequestTimeoutMs());
  }

  async tell(member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void> {
    if (this.closed || !this.set.admits(member, notification)) return;
    await this.protocol.notification(notification, options);
  }

  protected stopMembers(): void {
    this.set.stop();
  }

  protected closeMembers(): Promise<void> {
    return this.set.close();
  }
}
