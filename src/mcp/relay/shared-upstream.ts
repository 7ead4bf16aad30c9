/**
 * One stdio process shared by every /mcp/<client> session of its client. Nothing on stdio says which
 * request a server-to-client message belongs to, so the hub ties it by what is in flight: when exactly one
 * session has requests at the process (and the gateway's own calls are not running there), the message is
 * that session's; a request tied to no session, or to several, fails with -32603. Progress and
 * cancellation need no tie (the SDK maps tokens and ids per request). Resource updates go to the sessions
 * subscribed to the URI, list changes to every session. Subscriptions are counted per URI and the log level
 * is kept per session, so no session sees another's.
 */
import { ErrorCode, McpError, type LoggingLevel, type Notification, type Request, type Result } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../telemetry/logger.js";
import type { UpstreamSession } from "../upstream-session.js";
import { ANY_RESULT } from "./any-result.js";
import { factsOf } from "./owned-upstream.js";
import { ProgressRoutes } from "./progress-routes.js";
import { NO_SDK_TIMEOUT_MS } from "./relay-limits.js";
import { untiedRequest } from "./relay-errors.js";
import type { DownstreamSink, LinkRequestOptions, UpstreamFacts, UpstreamLink } from "./upstream-link.js";

/** Log levels from the most verbose up (RFC 5424 order, as MCP uses them). */
const LEVELS: readonly LoggingLevel[] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
/** What a session that never set a level is assumed to get from a server no one has set a level on. */
const ASSUMED_DEFAULT_LEVEL: LoggingLevel = "info";

function severity(level: unknown): number {
  const index = LEVELS.indexOf(level as LoggingLevel);
  return index < 0 ? LEVELS.length : index;
}

function stringParam(notification: Notification | Request, name: string): string | undefined {
  const value = notification.params?.[name];
  return typeof value === "string" ? value : undefined;
}

/** The shared process of one stdio client and the sessions relayed to it. */
export class SharedUpstream {
  private attached: UpstreamSession | undefined;
  private progress = new ProgressRoutes();
  private readonly members = new Set<SharedMember>();
  /** URI -> the sessions subscribed to it; the process is subscribed while the set is not empty. */
  private readonly subscribers = new Map<string, Set<SharedMember>>();
  /** The level last set on the process, null while none was. */
  private processLevel: LoggingLevel | null = null;
  /** URL-mode elicitation id -> the session it was sent to, for its notifications/elicitation/complete. */
  private readonly elicitations = new Map<string, SharedMember>();

  constructor(
    private readonly connection: () => Promise<UpstreamSession>,
    private readonly logger: Logger,
  ) {}

  /** Adds a session. */
  async join(sink: DownstreamSink): Promise<UpstreamLink> {
    const session = await this.current();
    const member = new SharedMember(this, sink, factsOf(session));
    this.members.add(member);
    return member;
  }

  /** The live connection, with the hub's handlers on it; a new process (after a re-dial) gets the subscriptions and level again. */
  async current(): Promise<UpstreamSession> {
    const session = await this.connection();
    if (session !== this.attached) this.attach(session);
    return session;
  }

  private attach(session: UpstreamSession): void {
    const previous = this.attached;
    this.attached = session;
    const client = session.sdkClient;
    this.progress = ProgressRoutes.install(client);
    client.fallbackRequestHandler = (request, extra) => {
      const params = request.params;
      return this.serverRequest(params === undefined ? { method: request.method } : { method: request.method, params }, extra.signal);
    };
    client.fallbackNotificationHandler = async (notification) => this.serverNotification(notification);
    if (previous === undefined) return;
    const restore = (request: Request) =>
      client.request(request, ANY_RESULT, { timeout: NO_SDK_TIMEOUT_MS }).catch((err: unknown) => this.logger.debug({ err, method: request.method }, "could not restore relay state on the new stdio process"));
    for (const uri of this.subscribers.keys()) void restore({ method: "resources/subscribe", params: { uri } });
    if (this.processLevel !== null) void restore({ method: "logging/setLevel", params: { level: this.processLevel } });
  }

  /** The one session with requests at the process, when exactly one has and the gateway's own calls are idle. */
  private tied(): SharedMember | undefined {
    if ((this.attached?.operationsInFlight() ?? 0) > 0) return undefined;
    let found: SharedMember | undefined;
    for (const member of this.members) {
      if (member.sink.requestsInFlight === 0) continue;
      if (found !== undefined) return undefined;
      found = member;
    }
    return found;
  }

  /** True when no session and none of the gateway's own calls are waiting on the process. */
  private idle(): boolean {
    if ((this.attached?.operationsInFlight() ?? 0) > 0) return false;
    for (const member of this.members) if (member.sink.requestsInFlight > 0) return false;
    return true;
  }

  private async serverRequest(request: Request, signal: AbortSignal): Promise<Result> {
    const member = this.tied();
    if (member === undefined) throw untiedRequest(request.method);
    const elicitationId = request.method === "elicitation/create" ? stringParam(request, "elicitationId") : undefined;
    if (elicitationId !== undefined) this.elicitations.set(elicitationId, member);
    return member.sink.serverRequest(request, signal);
  }

  private serverNotification(notification: Notification): void {
    const { method } = notification;
    if (method === "notifications/progress") {
      this.progress.deliver(notification);
      return;
    }
    if (method === "notifications/resources/updated") {
      const uri = stringParam(notification, "uri");
      for (const member of (uri === undefined ? undefined : this.subscribers.get(uri)) ?? []) member.sink.serverNotification(notification);
      return;
    }
    if (method.endsWith("/list_changed")) {
      for (const member of this.members) member.sink.serverNotification(notification);
      return;
    }
    if (method === "notifications/elicitation/complete") {
      const id = stringParam(notification, "elicitationId");
      const member = id === undefined ? undefined : this.elicitations.get(id);
      if (id !== undefined) this.elicitations.delete(id);
      member?.sink.serverNotification(notification);
      return;
    }
    if (method === "notifications/message") {
      const level = notification.params?.["level"];
      // A message during one session's requests is that session's; one while nothing runs is the server's own, for all.
      const tied = this.tied();
      const audience = tied !== undefined ? [tied] : this.idle() ? [...this.members] : [];
      for (const member of audience) if (this.accepts(member, level)) member.sink.serverNotification(notification);
      return;
    }
    this.tied()?.sink.serverNotification(notification);
  }

  /** Whether a session's level lets a message of `level` through. */
  private accepts(member: SharedMember, level: unknown): boolean {
    if (member.level !== null) return severity(level) >= severity(member.level);
    return this.processLevel === null || severity(level) >= severity(ASSUMED_DEFAULT_LEVEL);
  }

  /** The most verbose level any session asked for, or null when none did. */
  private wantedLevel(): LoggingLevel | null {
    let wanted: LoggingLevel | null = null;
    for (const member of this.members) {
      if (member.level !== null && (wanted === null || severity(member.level) < severity(wanted))) wanted = member.level;
    }
    return wanted;
  }

  /** Sets the process's level to what the sessions want, when that changed. */
  private async applyLevel(options: LinkRequestOptions | undefined): Promise<void> {
    const wanted = this.wantedLevel();
    if (wanted === null || wanted === this.processLevel) return;
    const client = (await this.current()).sdkClient;
    await client.request({ method: "logging/setLevel", params: { level: wanted } }, ANY_RESULT, { timeout: NO_SDK_TIMEOUT_MS, ...(options ? { signal: options.signal } : {}) });
    this.processLevel = wanted;
  }

  /** A session's logging/setLevel: its own level, and the process's when it must become more (or may become less) verbose. */
  async setLevel(member: SharedMember, level: LoggingLevel, options: LinkRequestOptions): Promise<Result> {
    const before = member.level;
    member.level = level;
    try {
      await this.applyLevel(options);
    } catch (err) {
      member.level = before;
      throw err;
    }
    return {};
  }

  /** A session's resources/subscribe: the process subscribes for the first session only. */
  async subscribe(member: SharedMember, request: Request, options: LinkRequestOptions): Promise<Result> {
    const uri = stringParam(request, "uri");
    const current = uri === undefined ? undefined : this.subscribers.get(uri);
    if (uri === undefined || current === undefined || current.size === 0) {
      const result = await member.forward(request, options);
      if (uri !== undefined) this.subscribers.set(uri, new Set([...(this.subscribers.get(uri) ?? []), member]));
      return result;
    }
    current.add(member);
    return {};
  }

  /** A session's resources/unsubscribe: the process unsubscribes when the last session does. */
  async unsubscribe(member: SharedMember, request: Request, options: LinkRequestOptions): Promise<Result> {
    const uri = stringParam(request, "uri");
    const current = uri === undefined ? undefined : this.subscribers.get(uri);
    if (uri === undefined || current === undefined || !current.has(member)) return member.forward(request, options);
    current.delete(member);
    if (current.size > 0) return {};
    this.subscribers.delete(uri);
    return member.forward(request, options);
  }

  /** Sends a session's request to the process as it is, its progress routed back to it. */
  async send(request: Request, options: LinkRequestOptions): Promise<Result> {
    const client = (await this.current()).sdkClient;
    const tagged = options.onprogress ? this.progress.tag(request, options.onprogress) : undefined;
    try {
      return (await client.request(tagged?.request ?? request, ANY_RESULT, { signal: options.signal, timeout: NO_SDK_TIMEOUT_MS })) as Result;
    } finally {
      tagged?.release();
    }
  }

  /** A session leaves: what only it held is released at the process. */
  leave(member: SharedMember): void {
    this.members.delete(member);
    for (const [id, holder] of this.elicitations) if (holder === member) this.elicitations.delete(id);
    const client = this.attached?.sdkClient;
    for (const [uri, set] of this.subscribers) {
      if (!set.delete(member) || set.size > 0) continue;
      this.subscribers.delete(uri);
      void client
        ?.request({ method: "resources/unsubscribe", params: { uri } }, ANY_RESULT, { timeout: NO_SDK_TIMEOUT_MS })
        .catch((err: unknown) => this.logger.debug({ err, uri }, "could not unsubscribe a closed relay session's resource"));
    }
    if (member.level !== null) void this.applyLevel(undefined).catch((err: unknown) => this.logger.debug({ err }, "could not lower the stdio server's log level"));
  }
}

/** One session's share of the process. */
class SharedMember implements UpstreamLink {
  readonly shared = true;
  /** The level this session set, null until it sets one. */
  level: LoggingLevel | null = null;

  constructor(
    private readonly hub: SharedUpstream,
    readonly sink: DownstreamSink,
    readonly facts: UpstreamFacts,
  ) {}

  request(request: Request, options: LinkRequestOptions): Promise<Result> {
    switch (request.method) {
      case "logging/setLevel": {
        const level = request.params?.["level"];
        if (!LEVELS.includes(level as LoggingLevel)) return Promise.reject(new McpError(ErrorCode.InvalidParams, `Invalid params: level must be one of ${LEVELS.join(", ")}`));
        return this.hub.setLevel(this, level as LoggingLevel, options);
      }
      case "resources/subscribe":
        return this.hub.subscribe(this, request, options);
      case "resources/unsubscribe":
        return this.hub.unsubscribe(this, request, options);
      default:
        return this.forward(request, options);
    }
  }

  /** Sends the request to the process as it is. */
  forward(request: Request, options: LinkRequestOptions): Promise<Result> {
    return this.hub.send(request, options);
  }

  async notify(notification: Notification): Promise<void> {
    await (await this.hub.current()).sdkClient.notification(notification);
  }

  async close(): Promise<void> {
    this.hub.leave(this);
  }
}
