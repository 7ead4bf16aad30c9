/**
 * The aggregated /mcp's prompts, resources, resource templates, completion and logging: relayed to every
 * MCP client the session's caller may use (member-set.ts names and routes them), over upstream sessions
 * opened on the first such request, not at initialize, so a session that only uses tools costs no upstream
 * session. Server-to-client requests of those upstreams go to this session's client; a client's upstream
 * session that ends is opened again on its next request, since the session's tools do not depend on it.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { NotificationOptions, RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { ClientCapabilities, Notification, Request, Result, ServerCapabilities, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { ANY_RESULT } from "../../mcp/relay/any-result.js";
import type { RelayExtra } from "../../mcp/relay/downstream-session.js";
import { MemberSet, type MemberSetDeps } from "../../mcp/relay/member-set.js";
import type { DownstreamSide, RelayMember } from "../../mcp/relay/relay-member.js";
import type { Logger } from "../../telemetry/logger.js";

/** What /mcp announces beside its tools: the gateway relays each part whether or not some client has it (an empty list when none does). */
export const AGGREGATED_CAPABILITIES: ServerCapabilities = {
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
};

/** The relayed methods and what the member set does with each. */
const METHODS = {
  "prompts/list": (set: MemberSet, request: Request, extra: RelayExtra) => set.listOthers(request, extra),
  "resources/list": (set: MemberSet, request: Request, extra: RelayExtra) => set.listOthers(request, extra),
  "resources/templates/list": (set: MemberSet, request: Request, extra: RelayExtra) => set.listOthers(request, extra),
  "prompts/get": (set: MemberSet, request: Request, extra: RelayExtra) => set.getPrompt(request, extra),
  "resources/read": (set: MemberSet, request: Request, extra: RelayExtra) => set.byUri(request, extra),
  "resources/subscribe": (set: MemberSet, request: Request, extra: RelayExtra) => set.byUri(request, extra),
  "resources/unsubscribe": (set: MemberSet, request: Request, extra: RelayExtra) => set.byUri(request, extra),
  "completion/complete": (set: MemberSet, request: Request, extra: RelayExtra) => set.complete(request, extra),
  "logging/setLevel": (set: MemberSet, request: Request, extra: RelayExtra) => set.setLevel(request, extra),
} as const;

/** The methods /mcp relays to its clients (each handler reads its request's caller once). */
export const AGGREGATED_METHODS: ReadonlySet<string> = new Set(Object.keys(METHODS));

/** The relay of one /mcp session's non-tool methods. */
export class AggregateRelay implements DownstreamSide {
  pending = 0;
  private set: MemberSet | undefined;
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly server: Server,
    private readonly logger: Logger,
    /** The clients of the session, read when it first needs them. */
    private readonly members: () => Pick<MemberSetDeps, "members" | "callerOf">,
  ) {}

  /** Registers the relayed methods on the session's server (which must announce AGGREGATED_CAPABILITIES). */
  install(): void {
    for (const [method, run] of Object.entries(METHODS)) {
      // Any params: the member set checks what it reads (-32602) and passes the rest on unchanged.
      const schema = z.object({ method: z.literal(method), params: z.record(z.string(), z.unknown()).optional() }).passthrough();
      this.server.setRequestHandler(schema, async (request, extra) => run(await this.memberSet(), request, extra));
    }
    this.server.fallbackNotificationHandler = async (notification) => {
      if (this.set !== undefined) await this.set.notifyAll(notification);
    };
  }

  /** The session's member set, its upstream sessions opened once. */
  private async memberSet(): Promise<MemberSet> {
    this.set ??= new MemberSet({ logFields: { endpoint: "/mcp" }, logger: this.logger, ...this.members() }, this);
    this.ready ??= this.set.openAll();
    await this.ready;
    return this.set;
  }

  get clientCapabilities(): ClientCapabilities | undefined {
    return this.server.getClientCapabilities();
  }

  async ask(request: Request, options: RequestOptions): Promise<Result> {
    return (await this.server.request(request as ServerRequest, ANY_RESULT, options)) as Result;
  }

  async tell(member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void> {
    // A client's own tool list changes are the gateway's to announce (its catalog names them <client>-<tool>).
    if (this.closed || notification.method === "notifications/tools/list_changed" || this.set?.admits(member, notification) !== true) return;
    await this.server.notification(notification as ServerNotification, options);
  }

  lost(member: RelayMember, err: Error): void {
    this.logger.info({ client: member.clientName, err: err.message }, "MCP: an upstream session of a /mcp session ended; the next request opens a new one");
    this.set?.renew(member);
  }

  /** Ends every upstream session the relay opened. */
  async close(): Promise<void> {
    this.closed = true;
    await this.set?.close();
  }
}
