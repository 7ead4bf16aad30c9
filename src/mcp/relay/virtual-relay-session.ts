/**
 * One downstream session of a virtual MCP server with several members, each member one upstream
 * (relay-member.ts). Names are prefixed as on /mcp: tools and prompts are `<client>-<name>`, and a request
 * naming one goes to that client under its own name; resources and resource templates keep their URIs, each
 * listed once (for the first member by client name) with `_meta["gw/client"]`, and a request for a URI goes
 * to the member that listed it. Lists are gathered from every member whole, so they have no pages. A member
 * that cannot be reached is left out of lists (and logged) rather than failing them; its own requests fail.
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
import { prefixedToolName, splitToolName } from "../tool-names.js";
import { ANY_RESULT } from "./any-result.js";
import { credentialResult } from "./credential-result.js";
import { DownstreamProtocol, type DownstreamSession } from "./downstream-protocol.js";
import { RelayMember, type DownstreamSide, type RelayCall, type RelayMemberDeps } from "./relay-member.js";
import type { RelayCaller, RelayOffers } from "./relay-session.js";
import { ResourceRoutes } from "./resource-routes.js";

/** One member as the session needs it. */
export interface VirtualMemberDeps extends RelayMemberDeps {
  /** The client's last discovered tools, listed while the caller has no credential. */
  cachedTools(): readonly DiscoveredTool[];
  /** Which of the client's resources and prompts the server offers now. */
  offers(): RelayOffers;
}

/** What a session needs from the gateway. */
export interface VirtualRelayDeps {
  /** The virtual server's name and description, announced at initialize. */
  name: string;
  description: string;
  /** The gateway's version, announced as the server's. */
  version: string;
  logger: Logger;
  /** The members the caller may use, at least two in the server. */
  members: readonly VirtualMemberDeps[];
  /** The caller of a request of this session, per member: whom the tools of that client are visible to. */
  callerOf(requestId: RequestId): (client: string) => RelayCaller;
  /** Runs once when the session ends, whatever ended it. */
  onClose(): void;
}

type Extra = RequestHandlerExtra<Request, Notification>;

/** The most pages read from one member for one list: a member that never stops paging is cut off here. */
const MAX_PAGES = 100;
/** The MCP code for a resource no one has. */
const RESOURCE_NOT_FOUND = -32002;
/** Where the items are in the result of each list method gathered from every member. */
const LISTS = {
  "tools/list": { field: "tools" },
  "prompts/list": { field: "prompts" },
  "resources/list": { field: "resources" },
  "resources/templates/list": { field: "resourceTemplates" },
} as const;
type ListMethod = keyof typeof LISTS;

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function stringParam(params: Record<string, unknown> | undefined, name: string): string {
  const value = params?.[name];
  if (typeof value !== "string") throw new McpError(ErrorCode.InvalidParams, `Invalid params: params.${name} must be a string`);
  return value;
}

/** A member's capabilities without the parts it leaves out. */
function offered(capabilities: ServerCapabilities, offers: RelayOffers): ServerCapabilities {
  return {
    ...(capabilities.tools !== undefined ? { tools: capabilities.tools } : {}),
    ...(offers.resources && capabilities.resources !== undefined ? { resources: capabilities.resources } : {}),
    ...(offers.prompts && capabilities.prompts !== undefined ? { prompts: capabilities.prompts } : {}),
    ...((offers.resources || offers.prompts) && capabilities.completions !== undefined ? { completions: capabilities.completions } : {}),
    ...(capabilities.logging !== undefined ? { logging: capabilities.logging } : {}),
  };
}

/** What the server announces: every member's capabilities together; tools always, since the gateway lists them. */
function unionOf(all: readonly ServerCapabilities[]): ServerCapabilities {
  const out: ServerCapabilities = { tools: { listChanged: true } };
  for (const capabilities of all) {
    if (capabilities.resources !== undefined) {
      const resources = out.resources ?? {};
      out.resources = {
        ...((resources.subscribe ?? false) || capabilities.resources.subscribe === true ? { subscribe: true } : {}),
        ...((resources.listChanged ?? false) || capabilities.resources.listChanged === true ? { listChanged: true } : {}),
      };
    }
    if (capabilities.prompts !== undefined) out.prompts = (out.prompts?.listChanged ?? false) || capabilities.prompts.listChanged === true ? { listChanged: true } : {};
    if (capabilities.completions !== undefined) out.completions = {};
    if (capabilities.logging !== undefined) out.logging = {};
  }
  return out;
}

interface Member {
  relay: RelayMember;
  deps: VirtualMemberDeps;
}

/** One relayed session of a virtual server with several members. */
export class VirtualRelaySession implements DownstreamSession, DownstreamSide {
  private readonly protocol = new DownstreamProtocol();
  /** By client name, in name order: the first lists a URI two members share. */
  private readonly members: Member[];
  private readonly routes = new ResourceRoutes();
  clientCapabilities: ClientCapabilities | undefined;
  pending = 0;
  private closed = false;
  failedToInitialize = false;

  constructor(private readonly deps: VirtualRelayDeps) {
    this.members = [...deps.members]
      .sort((a, b) => (a.clientName < b.clientName ? -1 : a.clientName > b.clientName ? 1 : 0))
      .map((member) => ({ relay: new RelayMember(member, this), deps: member }));
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
    return this.members.reduce((sum, member) => sum + member.relay.requestsInFlight, 0);
  }

  abandon(requestIds: readonly RequestId[]): void {
    for (const member of this.members) member.relay.abandon(requestIds);
  }

  private member(client: string): Member | undefined {
    return this.members.find((member) => member.relay.clientName === client);
  }

  private onRequest(request: JSONRPCRequest, extra: Extra): Promise<Result> {
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
        return this.listOthers(request, extra);
      case "prompts/get":
        return this.getPrompt(request, extra);
      case "resources/read":
      case "resources/subscribe":
      case "resources/unsubscribe":
        return this.byUri(request, extra, stringParam(request.params, "uri"), { ...request.params });
      case "completion/complete":
        return this.complete(request, extra);
      case "logging/setLevel":
        return this.setLevel(request, extra);
      default:
        return Promise.reject(new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method} is not relayed by a virtual MCP server with several members`));
    }
  }

  private async onNotification(notification: Notification): Promise<void> {
    if (notification.method === "notifications/initialized") return;
    await Promise.all(this.members.map((member) => member.relay.notify(notification)));
  }

  private async initialize(request: JSONRPCRequest): Promise<InitializeResult> {
    const params = request.params ?? {};
    this.clientCapabilities = params["capabilities"] as ClientCapabilities | undefined;
    const opened = await Promise.allSettled(this.members.map((member) => member.relay.open()));
    opened.forEach((outcome, index) => {
      if (outcome.status === "rejected") this.unreachable(this.members[index], outcome.reason);
    });
    const requested = params["protocolVersion"];
    const instructions = [
      this.deps.description,
      ...this.members.flatMap((member) => {
        const text = member.relay.facts.instructions;
        return text === undefined || text === "" ? [] : [`${member.relay.clientName}: ${text}`];
      }),
    ].filter((text) => text !== "");
    return {
      protocolVersion: typeof requested === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      capabilities: unionOf(this.members.map((member) => offered(member.relay.facts.capabilities, member.deps.offers()))),
      serverInfo: { name: this.deps.name, version: this.deps.version },
      ...(instructions.length > 0 ? { instructions: instructions.join("\n\n") } : {}),
    };
  }

  private unreachable(member: Member | undefined, err: unknown): void {
    this.deps.logger.warn({ virtual_server: this.deps.name, client: member?.relay.clientName, err: err instanceof Error ? err.message : String(err) }, "MCP virtual server: a member could not be reached; it is left out");
  }

  /** Every page of one list of one member, measured as one operation. */
  private async gather(member: Member, method: ListMethod, call: RelayCall, caller: RelayCaller): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    const started = performance.now();
    let errorType: McpErrorType = "_OTHER";
    try {
      let cursor: unknown;
      for (let page = 0; page < MAX_PAGES; page++) {
        const result = record(await member.relay.relay(cursor === undefined ? { method } : { method, params: { cursor } }, call));
        const list = result[LISTS[method].field];
        if (Array.isArray(list)) items.push(...list.map(record));
        cursor = result["nextCursor"];
        if (typeof cursor !== "string") break;
      }
      errorType = "";
      return items;
    } finally {
      caller.operationDone(method, "", (performance.now() - started) / 1000, errorType);
    }
  }

  /** One list from every member that offers it, each member's items as `adapt` makes them; unreachable members are left out. */
  private async fromEvery(
    request: JSONRPCRequest,
    extra: Extra,
    offersIt: (member: Member) => boolean,
    adapt: (member: Member, items: Record<string, unknown>[], caller: RelayCaller) => Record<string, unknown>[],
    uncredentialed: (member: Member, caller: RelayCaller) => Record<string, unknown>[] = () => [],
  ): Promise<Record<string, unknown>[]> {
    if (request.params?.["cursor"] !== undefined) throw new McpError(ErrorCode.InvalidParams, "Invalid params: unknown cursor (a virtual MCP server with several members lists everything on one page)");
    const method = request.method as ListMethod;
    const callers = this.deps.callerOf(extra.requestId);
    const members = this.members.filter(offersIt);
    const lists = await Promise.all(
      members.map(async (member): Promise<Record<string, unknown>[] | Error> => {
        const caller = callers(member.relay.clientName);
        try {
          await member.relay.open();
          if (member.relay.credentialMissing !== undefined) return uncredentialed(member, caller);
          return await this.gather(member, method, extra, caller);
        } catch (err) {
          return err instanceof Error ? err : new Error(String(err));
        }
      }),
    );
    const failed = lists.filter((list): list is Error => list instanceof Error);
    if (members.length > 0 && failed.length === members.length && failed[0] !== undefined) throw failed[0];
    const out: Record<string, unknown>[] = [];
    lists.forEach((list, index) => {
      const member = members[index];
      if (member === undefined) return;
      if (list instanceof Error) this.unreachable(member, list);
      else out.push(...adapt(member, list, callers(member.relay.clientName)));
    });
    return out;
  }

  private async listTools(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const tools = await this.fromEvery(
      request,
      extra,
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

  private async listOthers(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const method = request.method as Exclude<ListMethod, "tools/list">;
    const part = method === "prompts/list" ? "prompts" : "resources";
    const capable = (member: Member) => member.deps.offers()[part] && member.relay.facts.capabilities[part] !== undefined;
    if (method === "prompts/list") {
      const prompts = await this.fromEvery(request, extra, capable, (member, items) =>
        items.filter((prompt) => typeof prompt["name"] === "string").map((prompt) => ({ ...prompt, name: prefixedToolName(member.relay.clientName, String(prompt["name"])) })),
      );
      return { prompts };
    }
    const templates = method === "resources/templates/list";
    const key = templates ? "uriTemplate" : "uri";
    if (!templates) this.routes.release(this.members.filter(capable).map((member) => member.relay.clientName));
    const listed = await this.fromEvery(request, extra, capable, (member, items) => {
      const client = member.relay.clientName;
      const kept = items.filter((item) => typeof item[key] === "string");
      if (templates) this.routes.setTemplates(client, kept.map((item) => String(item[key])));
      return kept
        .filter((item) => {
          if (templates || this.routes.claim(String(item[key]), client)) return true;
          this.deps.logger.warn({ virtual_server: this.deps.name, client, uri: item[key] }, "MCP virtual server: two members list the same resource URI; it is listed for the first by client name");
          return false;
        })
        .map((item) => ({ ...item, _meta: { ...record(item["_meta"]), "gw/client": client } }));
    });
    return templates ? { resourceTemplates: listed } : { resources: listed };
  }

  private async callTool(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const callers = this.deps.callerOf(extra.requestId);
    const name = stringParam(request.params, "name");
    const split = splitToolName(name);
    const member = split === null ? undefined : this.member(split.client);
    const caller = member === undefined || split === null ? undefined : callers(split.client);
    if (member === undefined || split === null || caller === undefined || !caller.toolVisible(split.tool)) {
      return { content: [{ type: "text", text: `Error: tool "${name}" is not available: no tool of that name is visible to this caller (tools/list shows the ones that are)` }], isError: true };
    }
    const started = performance.now();
    let errorType: McpErrorType = "_OTHER";
    try {
      await member.relay.open();
      const missing = member.relay.credentialMissing;
      if (missing !== undefined) {
        errorType = "auth_required";
        return credentialResult(missing, extra.requestId, { protocol: this.protocol, capabilities: this.clientCapabilities, logger: this.deps.logger });
      }
      const result = await member.relay.relay({ method: request.method, params: { ...request.params, name: split.tool } }, extra);
      if ((result as { isError?: unknown }).isError !== true) errorType = "";
      return result;
    } finally {
      caller.operationDone("tools/call", split.tool, (performance.now() - started) / 1000, errorType);
    }
  }

  /** Relays a request to one member and measures it under its method. */
  private async measured(member: Member, request: Request, extra: Extra): Promise<Result> {
    const caller = this.deps.callerOf(extra.requestId)(member.relay.clientName);
    const started = performance.now();
    let errorType: McpErrorType = "_OTHER";
    try {
      const result = await member.relay.relay(request, extra);
      errorType = "";
      return result;
    } finally {
      caller.operationDone(request.method, "", (performance.now() - started) / 1000, errorType);
    }
  }

  /** prompts/get of a `<client>-<prompt>`: sent to that client under the prompt's own name. */
  private getPrompt(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const name = stringParam(request.params, "name");
    const split = splitToolName(name);
    const member = split === null ? undefined : this.member(split.client);
    if (split === null || member === undefined || !member.deps.offers().prompts) {
      return Promise.reject(new McpError(ErrorCode.InvalidParams, `Invalid params: no prompt "${name}": prompts here are named <client>-<prompt> (prompts/list shows them)`));
    }
    return this.measured(member, { method: request.method, params: { ...request.params, name: split.tool } }, extra);
  }

  /** The member a resource URI belongs to; resources are listed first when no listing has said yet. */
  private async ownerOf(uri: string, extra: Extra): Promise<Member> {
    const offering = this.members.filter((member) => member.deps.offers().resources && member.relay.facts.capabilities.resources !== undefined);
    let owner = this.routes.ownerOf(uri);
    if (owner === undefined && offering.length > 1) {
      // The client read a URI before listing (or one listed since): list both kinds once to learn who has it.
      await this.listOthers({ jsonrpc: "2.0", id: extra.requestId, method: "resources/list" }, extra).catch(() => undefined);
      await this.listOthers({ jsonrpc: "2.0", id: extra.requestId, method: "resources/templates/list" }, extra).catch(() => undefined);
      owner = this.routes.ownerOf(uri);
    }
    const member = owner === undefined ? (offering.length === 1 ? offering[0] : undefined) : offering.find((candidate) => candidate.relay.clientName === owner);
    if (member === undefined) throw new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}: no member of virtual MCP server "${this.deps.name}" lists it`, { uri });
    return member;
  }

  private async byUri(request: JSONRPCRequest, extra: Extra, uri: string, params: Record<string, unknown>): Promise<Result> {
    return this.measured(await this.ownerOf(uri, extra), { method: request.method, params }, extra);
  }

  /** completion/complete: a prompt argument goes to the prompt's client, a template argument to the template's. */
  private async complete(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const ref = record(request.params?.["ref"]);
    if (ref["type"] === "ref/prompt") {
      const name = typeof ref["name"] === "string" ? ref["name"] : "";
      const split = splitToolName(name);
      const member = split === null ? undefined : this.member(split.client);
      if (split === null || member === undefined || !member.deps.offers().prompts) throw new McpError(ErrorCode.InvalidParams, `Invalid params: no prompt "${name}" to complete`);
      return this.measured(member, { method: request.method, params: { ...request.params, ref: { ...ref, name: split.tool } } }, extra);
    }
    if (ref["type"] === "ref/resource" && typeof ref["uri"] === "string") {
      return this.measured(await this.ownerOf(ref["uri"], extra), { method: request.method, params: { ...request.params } }, extra);
    }
    throw new McpError(ErrorCode.InvalidParams, `Invalid params: params.ref must be {"type": "ref/prompt", "name"} or {"type": "ref/resource", "uri"}`);
  }

  /** logging/setLevel goes to every member that logs; it fails only when every one of them failed. */
  private async setLevel(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const logging = this.members.filter((member) => member.relay.facts.capabilities.logging !== undefined);
    const outcomes = await Promise.allSettled(logging.map((member) => this.measured(member, { method: request.method, params: { ...request.params } }, extra)));
    const failed = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
    if (logging.length > 0 && failed.length === logging.length) throw failed[0]?.reason;
    return {};
  }

  async ask(request: Request, options: RequestOptions): Promise<Result> {
    return (await this.protocol.request(request, ANY_RESULT, options)) as Result;
  }

  async tell(member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void> {
    if (this.closed) return;
    const { method, params } = notification;
    const offers = this.member(member.clientName)?.deps.offers();
    if (method.startsWith("notifications/resources/") && offers?.resources !== true) return;
    if (method.startsWith("notifications/prompts/") && offers?.prompts !== true) return;
    if (method === "notifications/resources/updated" && typeof params?.["uri"] === "string" && !this.routes.tells(params["uri"], member.clientName)) return;
    await this.protocol.notification(notification, options);
  }

  lost(member: RelayMember, err: Error): void {
    this.deps.logger.info({ virtual_server: this.deps.name, client: member.clientName, err: err.message }, "MCP relay: a member's upstream session ended; closing the client's session");
    void this.close();
  }

  /** Ends the session: requests in flight are cancelled upstream, every member's upstream session (or share) is closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const member of this.members) member.relay.stop();
    await this.protocol.close().catch(() => undefined);
    await Promise.all(this.members.map((member) => member.relay.close()));
    this.deps.onClose();
  }
}
