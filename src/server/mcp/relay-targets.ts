/**
 * What /mcp/<name> serves a caller: an MCP client's whole surface, or a virtual MCP server (its members'
 * chosen parts), and how a session on it is built. Access is the /mcp rule: the caller's virtual key must
 * let it use a client and the include headers must not leave it out, else the client is as unknown as a
 * missing one (404); a virtual server offers only the members the caller may use, and of those only what
 * both the server and the rule allow, so it never widens access.
 */
import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../errors.js";
import type { McpClientSpec } from "../../mcp/client-spec.js";
import type { DownstreamSession } from "../../mcp/relay/downstream-protocol.js";
import type { RelayOperation } from "../../mcp/relay/downstream-session.js";
import { RelaySession, type RelayCaller, type RelayOffers } from "../../mcp/relay/relay-session.js";
import type { RelaySource } from "../../mcp/relay/relay-source.js";
import type { RelayUpstreams } from "../../mcp/relay/relay-upstreams.js";
import type { MemberSetDeps, SetMemberDeps } from "../../mcp/relay/member-set.js";
import { VirtualRelaySession } from "../../mcp/relay/virtual-relay-session.js";
import { memberOffersTool, type VirtualMember, type VirtualServerDefinition, type VirtualServers } from "../../mcp/relay/virtual-servers.js";
import type { McpRuntime } from "../../mcp/runtime.js";
import { toolAllowed } from "../../mcp/tool-names.js";
import { toolVisible } from "../../services/inference/tool-visibility.js";
import type { McpCaller } from "../../services/mcp-server-tools.js";
import type { Logger } from "../../telemetry/logger.js";
import { Refusal, SERVER_ERROR } from "./mcp-http.js";

/** What resolving and opening targets needs. */
export interface RelayTargetDeps {
  runtime: Pick<McpRuntime, "relaySource" | "everyRelaySource">;
  virtualServers: Pick<VirtualServers, "get" | "member">;
  upstreams: RelayUpstreams;
  logger: Logger;
  /** The gateway's version, announced by virtual servers with several members. */
  version: string;
}

/** How a new session reads the caller of each of its requests and reports its end. */
export interface SessionHooks {
  /** The caller of a request of the session (the opener until a request says otherwise). */
  callerOf(requestId: RequestId): McpCaller;
  onClose(): void;
}

/** What /mcp/<name> serves one caller. */
export interface RelayTarget {
  /** Throws a 503 when a new session cannot open now (its client refuses calls). */
  admit(): void;
  /** A new session for `caller`. */
  open(caller: McpCaller, hooks: SessionHooks): DownstreamSession;
}

/** Whether the caller may use the client at all: the key names it (or has no mcp_configs, or the client is open to every key) and the include headers keep it. */
export function clientVisible(caller: McpCaller, spec: McpClientSpec): boolean {
  const key = caller.key;
  if (key !== null && key.mcpConfigs !== null && !spec.allowOnAllVirtualKeys && !key.mcpConfigs.some((entry) => entry.mcpClientName === spec.name)) return false;
  const clients = caller.include.clients;
  return clients === null || clients === "*" || clients.has(spec.name);
}

/** The caller of one request as the relay sees it, for one client (narrowed further by a virtual server's member). */
export function relayCaller(caller: McpCaller, source: RelaySource, member?: () => VirtualMember | undefined): RelayCaller {
  const scope = { key: caller.key, ...caller.include };
  const governance = caller.key === null ? undefined : { virtualKeyId: caller.key.id, virtualKeyName: caller.key.name };
  return {
    toolVisible: (tool) => {
      const spec = source.spec;
      if (member !== undefined) {
        const current = member();
        if (current === undefined || !memberOffersTool(current, tool)) return false;
      }
      return toolAllowed(spec.toolsToExecute, tool) && toolVisible(scope, { clientName: spec.name, toolName: tool, allowOnAllVirtualKeys: spec.allowOnAllVirtualKeys });
    },
    begin: (method, tool) => {
      const started = performance.now();
      const span = caller.trace?.relayedMcpRequest({ method, tool, client: source.spec.name });
      return {
        end: (errorType) => {
          source.operationDone(method, tool, (performance.now() - started) / 1000, errorType, governance);
          span?.end({ status: null, ...(errorType !== "" ? { errorType: errorType === "_OTHER" ? "mcp_error" : errorType } : {}) });
        },
      };
    },
  };
}

const EVERYTHING: RelayOffers = { resources: true, prompts: true };
/** The operation of a caller the session has no client for (never reached: members come with their sources). */
const NOT_MEASURED: RelayOperation = { end: () => undefined };

/** Why /mcp/<name> answers 404: the same for a name that does not exist and one the caller may not use. */
function unknownName(name: string): Refusal {
  return new Refusal(404, SERVER_ERROR, `no MCP server at /mcp/${name}: there is no MCP client or virtual MCP server "${name}", or your virtual key and include headers do not let you use it`);
}

/** A client that refuses calls refuses new sessions. */
function admitSource(source: RelaySource): void {
  const refusal = source.refusal();
  if (refusal !== null) throw new Refusal(503, SERVER_ERROR, refusal);
}

/** Resolves and opens the targets of /mcp/<name>. */
export class RelayTargets {
  constructor(private readonly deps: RelayTargetDeps) {}

  /** What /mcp/<name> serves `caller`; a 404 when nothing the caller may use is there. */
  resolve(name: string, caller: McpCaller): RelayTarget {
    const source = this.deps.runtime.relaySource(name);
    if (source !== undefined) {
      if (!clientVisible(caller, source.spec)) throw unknownName(name);
      return { admit: () => admitSource(source), open: (opener, hooks) => this.clientSession(source, opener, hooks) };
    }
    const server = this.deps.virtualServers.get(name);
    if (server === undefined) throw unknownName(name);
    const visible = server.members.flatMap((member) => {
      const memberSource = this.deps.runtime.relaySource(member.client);
      return memberSource !== undefined && clientVisible(caller, memberSource.spec) ? [{ member, source: memberSource }] : [];
    });
    const [only] = visible;
    if (only === undefined) throw unknownName(name);
    if (server.members.length === 1) {
      const live = () => this.deps.virtualServers.member(server.name, only.member.client);
      return { admit: () => admitSource(only.source), open: (opener, hooks) => this.clientSession(only.source, opener, hooks, live) };
    }
    return {
      admit: () => {
        const refusals = visible.map(({ source: memberSource }) => memberSource.refusal());
        if (refusals.every((refusal) => refusal !== null)) throw new Refusal(503, SERVER_ERROR, refusals.join("; "));
      },
      open: (opener, hooks) => this.virtualSession(server, visible, opener, hooks),
    };
  }

  /** A session on one client; `member` narrows it to a one-member virtual server's choice. */
  private clientSession(source: RelaySource, opener: McpCaller, hooks: SessionHooks, member?: () => VirtualMember | undefined): RelaySession {
    const credential = { identity: opener.identity, subjectToken: opener.subjectToken, origin: opener.origin, virtualKeyId: opener.key?.id ?? null };
    const { upstreams } = this.deps;
    return new RelaySession({
      clientName: source.spec.name,
      logger: this.deps.logger,
      connect: (sink, capabilities) => upstreams.connect(source, credential, sink, capabilities),
      callerOf: (id) => relayCaller(hooks.callerOf(id), source, member),
      cachedTools: () => source.tools(),
      knownFacts: () => upstreams.knownFacts(source.clientId),
      requestTimeoutMs: () => source.requestTimeoutMs(),
      serverRequestTimeoutMs: () => source.serverRequestTimeoutMs(),
      refusal: () => source.refusal(),
      ...(member !== undefined ? { offers: () => member() ?? { resources: false, prompts: false } } : {}),
      onClose: hooks.onClose,
    });
  }

  /** A session on a virtual server with several members, of which the caller may use `members`. */
  private virtualSession(server: VirtualServerDefinition, members: readonly { member: VirtualMember; source: RelaySource }[], opener: McpCaller, hooks: SessionHooks): VirtualRelaySession {
    const { virtualServers } = this.deps;
    const parts = this.memberParts(
      members.map(({ member, source }) => ({ source, offers: () => virtualServers.member(server.name, member.client) ?? { resources: false, prompts: false } })),
      opener,
      hooks.callerOf,
      (client) => () => virtualServers.member(server.name, client),
    );
    return new VirtualRelaySession({ name: server.name, description: server.description, version: this.deps.version, logger: this.deps.logger, ...parts, onClose: hooks.onClose });
  }

  /**
   * The clients behind the aggregated /mcp's prompts, resources, completion and logging for `opener`: every
   * client it may use that takes calls now, each offering all of its surface. Tools are not among them:
   * /mcp lists and runs those through the runtime's catalog.
   */
  aggregate(opener: McpCaller, callerOf: (requestId: RequestId) => McpCaller): Pick<MemberSetDeps, "members" | "callerOf"> {
    const sources = this.deps.runtime.everyRelaySource().filter((source) => source.refusal() === null && clientVisible(opener, source.spec));
    return this.memberParts(
      sources.map((source) => ({ source, offers: () => EVERYTHING })),
      opener,
      callerOf,
    );
  }

  /** The members of a session with several clients, and its caller per client; `narrow` is a virtual server's member choice. */
  private memberParts(
    members: readonly { source: RelaySource; offers: () => RelayOffers }[],
    opener: McpCaller,
    callerOf: (requestId: RequestId) => McpCaller,
    narrow?: (client: string) => () => VirtualMember | undefined,
  ): Pick<MemberSetDeps, "members" | "callerOf"> {
    const credential = { identity: opener.identity, subjectToken: opener.subjectToken, origin: opener.origin, virtualKeyId: opener.key?.id ?? null };
    const { upstreams } = this.deps;
    const sources = new Map(members.map(({ source }) => [source.spec.name, source]));
    return {
      members: members.map(({ source, offers }): SetMemberDeps => ({
        clientName: source.spec.name,
        logger: this.deps.logger,
        connect: (sink, capabilities) => {
          // A member that refuses calls is left out of the session's lists, as one that is down.
          const refusal = source.refusal();
          if (refusal !== null) return Promise.reject(new GatewayError("unavailable", refusal));
          return upstreams.connect(source, credential, sink, capabilities);
        },
        knownFacts: () => upstreams.knownFacts(source.clientId),
        requestTimeoutMs: () => source.requestTimeoutMs(),
        serverRequestTimeoutMs: () => source.serverRequestTimeoutMs(),
        refusal: () => source.refusal(),
        cachedTools: () => source.tools(),
        offers,
      })),
      callerOf: (id) => {
        const caller = callerOf(id);
        return (client) => {
          const source = sources.get(client);
          // Members come from `members`, so every client has its source; a stranger sees nothing.
          if (source === undefined) return { toolVisible: () => false, begin: () => NOT_MEASURED };
          return relayCaller(caller, source, narrow?.(client));
        };
      },
    };
  }
}
