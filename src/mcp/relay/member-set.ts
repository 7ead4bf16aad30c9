/**
 * The upstreams of a downstream session that speaks for several MCP clients at once (a virtual server with
 * several members, or the aggregated /mcp), each one a relay member (relay-member.ts). Names are prefixed as
 * on /mcp: prompts are `<client>-<name>` and a request naming one goes to that client under its own name;
 * resources and resource templates keep their URIs, each listed once (for the first member by client name)
 * with `_meta["gw/client"]`, and a request for a URI goes to the member that listed it. Lists are gathered
 * from every member whole, so they have no pages. A member that cannot be reached is left out of lists (and
 * logged) rather than failing them; its own requests fail. The session that holds the set speaks to the
 * downstream client; the set only routes.
 */
import { McpError, ErrorCode, type Notification, type Request, type RequestId, type Result, type ServerCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../telemetry/logger.js";
import type { McpErrorType } from "../../telemetry/metrics.js";
import type { DiscoveredTool } from "../discover.js";
import { prefixedToolName, splitToolName } from "../tool-names.js";
import type { RelayExtra } from "./downstream-session.js";
import { RelayMember, type DownstreamSide, type RelayCall, type RelayMemberDeps } from "./relay-member.js";
import type { RelayCaller, RelayOffers } from "./relay-session.js";
import { ResourceRoutes } from "./resource-routes.js";

/** One member as the set needs it. */
export interface SetMemberDeps extends RelayMemberDeps {
  /** The client's last discovered tools, listed while the caller has no credential. */
  cachedTools(): readonly DiscoveredTool[];
  /** Which of the client's resources and prompts the session offers now. */
  offers(): RelayOffers;
}

/** What a set needs from the session that holds it. */
export interface MemberSetDeps {
  /** Log fields that say which session this is (e.g. the virtual server's name). */
  logFields: Record<string, string>;
  logger: Logger;
  members: readonly SetMemberDeps[];
  /** The caller of a request of the session, per member: whom the tools of that client are visible to. */
  callerOf(requestId: RequestId): Callers;
}

/** The caller of one downstream request, per member client. */
export type Callers = (client: string) => RelayCaller;

/** One member of the set. */
export interface Member {
  relay: RelayMember;
  deps: SetMemberDeps;
}

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

/** A string parameter of a request, or the -32602 naming it. */
export function stringParam(params: Record<string, unknown> | undefined, name: string): string {
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

/** Every member's capabilities together; tools always, since the gateway lists them. */
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

/** The members of one session and the routes of its resource URIs. */
export class MemberSet {
  /** By client name, in name order: the first lists a URI two members share. */
  readonly members: Member[];
  private readonly routes = new ResourceRoutes();

  constructor(
    private readonly deps: MemberSetDeps,
    private readonly side: DownstreamSide,
  ) {
    this.members = [...deps.members]
      .sort((a, b) => (a.clientName < b.clientName ? -1 : a.clientName > b.clientName ? 1 : 0))
      .map((member) => ({ relay: new RelayMember(member, side), deps: member }));
  }

  get requestsInFlight(): number {
    return this.members.reduce((sum, member) => sum + member.relay.requestsInFlight, 0);
  }

  abandon(requestIds: readonly RequestId[]): void {
    for (const member of this.members) member.relay.abandon(requestIds);
  }

  /** The member for `client`, if the set has it. */
  member(client: string): Member | undefined {
    return this.members.find((member) => member.relay.clientName === client);
  }

  /** Opens every member's link; one that cannot be reached is logged and left out of lists. */
  async openAll(): Promise<void> {
    const opened = await Promise.allSettled(this.members.map((member) => member.relay.open()));
    opened.forEach((outcome, index) => {
      if (outcome.status === "rejected") this.unreachable(this.members[index], outcome.reason);
    });
  }

  /** What the members announce together: each one's capabilities as far as the session offers them. */
  capabilities(): ServerCapabilities {
    return unionOf(this.members.map((member) => offered(member.relay.facts.capabilities, member.deps.offers())));
  }

  /** Each member's instructions, headed by its client name. */
  instructions(): string[] {
    return this.members.flatMap((member) => {
      const text = member.relay.facts.instructions;
      return text === undefined || text === "" ? [] : [`${member.relay.clientName}: ${text}`];
    });
  }

  /** Sends a notification of the downstream client to every member's upstream. */
  async notifyAll(notification: Notification): Promise<void> {
    await Promise.all(this.members.map((member) => member.relay.notify(notification)));
  }

  /** Replaces a member whose upstream session ended: its next request opens a new one. */
  renew(lost: RelayMember): void {
    const at = this.members.findIndex((member) => member.relay === lost);
    const member = this.members[at];
    if (member === undefined) return;
    this.members[at] = { relay: new RelayMember(member.deps, this.side), deps: member.deps };
    void lost.close();
  }

  private unreachable(member: Member | undefined, err: unknown): void {
    this.deps.logger.warn({ ...this.deps.logFields, client: member?.relay.clientName, err: err instanceof Error ? err.message : String(err) }, "MCP: a client of a session with several clients could not be reached; it is left out");
  }

  /** Every page of one list of one member, measured as one operation. */
  private async gather(member: Member, method: ListMethod, call: RelayCall, caller: RelayCaller): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    const operation = caller.begin(method, "");
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
      operation.end(errorType);
    }
  }

  /** One list from every member that offers it, each member's items as `adapt` makes them; unreachable members are left out. */
  async fromEvery(
    request: Request,
    extra: RelayExtra,
    callers: Callers,
    offersIt: (member: Member) => boolean,
    adapt: (member: Member, items: Record<string, unknown>[], caller: RelayCaller) => Record<string, unknown>[],
    uncredentialed: (member: Member, caller: RelayCaller) => Record<string, unknown>[] = () => [],
  ): Promise<Record<string, unknown>[]> {
    if (request.params?.["cursor"] !== undefined) throw new McpError(ErrorCode.InvalidParams, "Invalid params: unknown cursor (a session with several MCP clients lists everything on one page)");
    const method = request.method as ListMethod;
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

  /** The caller of a request per client: read once per downstream request, since reading it forgets it. */
  callers(extra: RelayExtra): Callers {
    return this.deps.callerOf(extra.requestId);
  }

  /** prompts/list, resources/list or resources/templates/list, gathered from every member that offers it. */
  listOthers(request: Request, extra: RelayExtra): Promise<Result> {
    return this.list(request, extra, this.callers(extra));
  }

  private async list(request: Request, extra: RelayExtra, callers: Callers): Promise<Result> {
    const method = request.method as Exclude<ListMethod, "tools/list">;
    const part = method === "prompts/list" ? "prompts" : "resources";
    const capable = (member: Member) => member.deps.offers()[part] && member.relay.facts.capabilities[part] !== undefined;
    if (method === "prompts/list") {
      const prompts = await this.fromEvery(request, extra, callers, capable, (member, items) =>
        items.filter((prompt) => typeof prompt["name"] === "string").map((prompt) => ({ ...prompt, name: prefixedToolName(member.relay.clientName, String(prompt["name"])) })),
      );
      return { prompts };
    }
    const templates = method === "resources/templates/list";
    const key = templates ? "uriTemplate" : "uri";
    if (!templates) this.routes.release(this.members.filter(capable).map((member) => member.relay.clientName));
    const listed = await this.fromEvery(request, extra, callers, capable, (member, items) => {
      const client = member.relay.clientName;
      const kept = items.filter((item) => typeof item[key] === "string");
      if (templates) this.routes.setTemplates(client, kept.map((item) => String(item[key])));
      return kept
        .filter((item) => {
          if (templates || this.routes.claim(String(item[key]), client)) return true;
          this.deps.logger.warn({ ...this.deps.logFields, client, uri: item[key] }, "MCP: two clients list the same resource URI; it is listed for the first by client name");
          return false;
        })
        .map((item) => ({ ...item, _meta: { ...record(item["_meta"]), "gw/client": client } }));
    });
    return templates ? { resourceTemplates: listed } : { resources: listed };
  }

  /** Relays a request to one member and measures it under its method. */
  private async measured(member: Member, request: Request, extra: RelayExtra, callers: Callers): Promise<Result> {
    const operation = callers(member.relay.clientName).begin(request.method, "");
    let errorType: McpErrorType = "_OTHER";
    try {
      const result = await member.relay.relay(request, extra);
      errorType = "";
      return result;
    } finally {
      operation.end(errorType);
    }
  }

  /** prompts/get of a `<client>-<prompt>`: sent to that client under the prompt's own name. */
  getPrompt(request: Request, extra: RelayExtra): Promise<Result> {
    const name = stringParam(request.params, "name");
    const split = splitToolName(name);
    const member = split === null ? undefined : this.member(split.client);
    if (split === null || member === undefined || !member.deps.offers().prompts) {
      return Promise.reject(new McpError(ErrorCode.InvalidParams, `Invalid params: no prompt "${name}": prompts here are named <client>-<prompt> (prompts/list shows them)`));
    }
    return this.measured(member, { method: request.method, params: { ...request.params, name: split.tool } }, extra, this.callers(extra));
  }

  /** The member a resource URI belongs to; resources are listed first when no listing has said yet. */
  private async ownerOf(uri: string, extra: RelayExtra, callers: Callers): Promise<Member> {
    const offering = this.members.filter((member) => member.deps.offers().resources && member.relay.facts.capabilities.resources !== undefined);
    let owner = this.routes.ownerOf(uri);
    if (owner === undefined && offering.length > 1) {
      // The client read a URI before listing (or one listed since): list both kinds once to learn who has it.
      await this.list({ method: "resources/list" }, extra, callers).catch(() => undefined);
      await this.list({ method: "resources/templates/list" }, extra, callers).catch(() => undefined);
      owner = this.routes.ownerOf(uri);
    }
    const member = owner === undefined ? (offering.length === 1 ? offering[0] : undefined) : offering.find((candidate) => candidate.relay.clientName === owner);
    if (member === undefined) throw new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}: no MCP client of this session lists it`, { uri });
    return member;
  }

  /** resources/read, resources/subscribe and resources/unsubscribe: sent to the member that listed the URI. */
  async byUri(request: Request, extra: RelayExtra): Promise<Result> {
    const uri = stringParam(request.params, "uri");
    const callers = this.callers(extra);
    return this.measured(await this.ownerOf(uri, extra, callers), { method: request.method, params: { ...request.params } }, extra, callers);
  }

  /** completion/complete: a prompt argument goes to the prompt's client, a template argument to the template's. */
  async complete(request: Request, extra: RelayExtra): Promise<Result> {
    const callers = this.callers(extra);
    const ref = record(request.params?.["ref"]);
    if (ref["type"] === "ref/prompt") {
      const name = typeof ref["name"] === "string" ? ref["name"] : "";
      const split = splitToolName(name);
      const member = split === null ? undefined : this.member(split.client);
      if (split === null || member === undefined || !member.deps.offers().prompts) throw new McpError(ErrorCode.InvalidParams, `Invalid params: no prompt "${name}" to complete`);
      return this.measured(member, { method: request.method, params: { ...request.params, ref: { ...ref, name: split.tool } } }, extra, callers);
    }
    if (ref["type"] === "ref/resource" && typeof ref["uri"] === "string") {
      return this.measured(await this.ownerOf(ref["uri"], extra, callers), { method: request.method, params: { ...request.params } }, extra, callers);
    }
    throw new McpError(ErrorCode.InvalidParams, `Invalid params: params.ref must be {"type": "ref/prompt", "name"} or {"type": "ref/resource", "uri"}`);
  }

  /** logging/setLevel goes to every member that logs; it fails only when every one of them failed. */
  async setLevel(request: Request, extra: RelayExtra): Promise<Result> {
    const callers = this.callers(extra);
    const logging = this.members.filter((member) => member.relay.facts.capabilities.logging !== undefined);
    const outcomes = await Promise.allSettled(logging.map((member) => this.measured(member, { method: request.method, params: { ...request.params } }, extra, callers)));
    const failed = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
    if (logging.length > 0 && failed.length === logging.length) throw failed[0]?.reason;
    return {};
  }

  /** Whether a notification of `member`'s upstream may reach the downstream client: not of a part it leaves out, nor of a URI another member has. */
  admits(member: RelayMember, notification: Notification): boolean {
    const { method, params } = notification;
    const offers = this.member(member.clientName)?.deps.offers();
    if (method.startsWith("notifications/resources/") && offers?.resources !== true) return false;
    if (method.startsWith("notifications/prompts/") && offers?.prompts !== true) return false;
    return !(method === "notifications/resources/updated" && typeof params?.["uri"] === "string" && !this.routes.tells(params["uri"], member.clientName));
  }

  /** Cancels every request in flight upstream (the links stay until close()). */
  stop(): void {
    for (const member of this.members) member.relay.stop();
  }

  /** Closes every member's upstream session (or share of one). */
  async close(): Promise<void> {
    this.stop();
    await Promise.all(this.members.map((member) => member.relay.close()));
  }
}
