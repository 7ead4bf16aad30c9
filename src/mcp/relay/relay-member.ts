/**
 * One upstream of a relayed downstream session: its link (opened once, or left unopened while the caller
 * has no per-user credential), the downstream requests in flight there, and the upstream's own requests
 * and notifications, which go to the downstream client tied to the request they came during. Every
 * request is sent on with the other side's id, its progress token swapped for one of the link's and
 * swapped back here, and its cancellation carried by an abort signal. A /mcp/<client> session has one
 * member; a virtual server's session one per client.
 */
import type { NotificationOptions, RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ErrorCode, McpError, type ClientCapabilities, type Notification, type Request, type RequestId, type Result } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../errors.js";
import type { Logger } from "../../telemetry/logger.js";
import { McpAuthRequiredError } from "../credentials/auth-required.js";
import { relayedClientCapabilities, undeclaredCapability } from "./capabilities.js";
import { clientGone, credentialRequired, openFailed, relayedError, relayTimeout, tooManyPending } from "./relay-errors.js";
import { MAX_PENDING_SERVER_REQUESTS } from "./relay-limits.js";
import type { DownstreamSink, UpstreamFacts, UpstreamLink } from "./upstream-link.js";

/** What the members of one session share: the downstream client and its bound on pending requests. */
export interface DownstreamSide {
  /** What the downstream client declared at initialize. */
  readonly clientCapabilities: ClientCapabilities | undefined;
  /** Server-to-client requests of every member waiting on the client now. */
  pending: number;
  /** Sends a request to the downstream client. */
  ask(request: Request, options: RequestOptions): Promise<Result>;
  /** Sends a notification of `member`'s upstream to the downstream client. */
  tell(member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void>;
  /** The member's own upstream connection ended. */
  lost(member: RelayMember, err: Error): void;
}

/** What a member needs from the gateway. */
export interface RelayMemberDeps {
  /** The MCP client's name. */
  clientName: string;
  logger: Logger;
  /** Opens the member's link, declaring `capabilities`; throws when a per-user credential is missing. */
  connect(sink: DownstreamSink, capabilities: ClientCapabilities): Promise<UpstreamLink>;
  /** What the upstream last answered at initialize, announced while the caller has no credential. */
  knownFacts(): UpstreamFacts | undefined;
  /** The bound of one relayed request, not counting time spent waiting on the downstream client. */
  requestTimeoutMs(): number;
  /** How long a server-to-client request waits for the downstream client's answer (client.mcp_relay_request_timeout), read per request. */
  serverRequestTimeoutMs(): number;
  /** Why the client refuses calls now (disabled, needs_reauth, ...); null while it takes them. */
  refusal(): string | null;
}

/** The downstream request being relayed: its id, its cancellation, and where its progress goes. */
export interface RelayCall {
  requestId: RequestId;
  signal: AbortSignal;
  sendNotification(notification: Notification): Promise<void>;
}

/** Errors that leave the member without a link until the caller has a credential. */
function isCredentialMissing(err: unknown): err is McpAuthRequiredError | GatewayError {
  return err instanceof McpAuthRequiredError || (err instanceof GatewayError && err.type === "mcp_identity_required");
}

function progressTokenOf(request: Request): string | number | undefined {
  const token = (request.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
  return typeof token === "string" || typeof token === "number" ? token : undefined;
}

/** The fallback server facts of a client never reached yet. */
function unknownFacts(clientName: string): UpstreamFacts {
  return { capabilities: { tools: { listChanged: true } }, serverInfo: { name: clientName, version: "unknown" }, instructions: undefined };
}

/** A downstream request at the upstream: its cancellation, and a deadline that stops while the downstream client is being asked something. */
class InFlight {
  readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private waiting = 0;
  private finished = false;

  constructor(
    readonly method: string,
    private readonly timeoutMs: number,
  ) {
    this.arm();
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.controller.abort(relayTimeout(this.method, this.timeoutMs)), this.timeoutMs);
    this.timer.unref();
  }

  /** Progress arrived: the deadline starts again. */
  progressed(): void {
    if (this.waiting === 0 && !this.finished) this.arm();
  }

  /** A server-to-client request tied to this one is waiting on the client. */
  hold(): void {
    this.waiting++;
    clearTimeout(this.timer);
  }

  /** That request was answered. */
  release(): void {
    this.waiting--;
    if (this.waiting === 0 && !this.finished) this.arm();
  }

  done(): void {
    this.finished = true;
    clearTimeout(this.timer);
  }
}

/** One upstream of a session. */
export class RelayMember implements DownstreamSink {
  private link: UpstreamLink | undefined;
  /** Why there is no link yet: the caller has no credential for the per-user client. */
  private missing: McpAuthRequiredError | GatewayError | undefined;
  private opening: Promise<void> | undefined;
  private readonly inFlight = new Map<RequestId, InFlight>();
  private closed = false;

  constructor(
    private readonly deps: RelayMemberDeps,
    private readonly downstream: DownstreamSide,
  ) {}

  get clientName(): string {
    return this.deps.clientName;
  }

  get requestsInFlight(): number {
    return this.inFlight.size;
  }

  /** What the upstream answered at initialize, or the best known stand-in. */
  get facts(): UpstreamFacts {
    return this.link?.facts ?? this.deps.knownFacts() ?? unknownFacts(this.deps.clientName);
  }

  /** Whether the link is open. */
  get linked(): boolean {
    return this.link !== undefined;
  }

  /** The credential error while the member has no link for want of one; undefined otherwise. */
  get credentialMissing(): McpAuthRequiredError | GatewayError | undefined {
    return this.link === undefined ? this.missing : undefined;
  }

  /** Opens the link once (concurrent requests wait for the same attempt); a missing credential leaves none. */
  open(): Promise<void> {
    if (this.link !== undefined) return Promise.resolve();
    this.opening ??= this.openNow().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  private async openNow(): Promise<void> {
    let link: UpstreamLink;
    try {
      link = await this.deps.connect(this, relayedClientCapabilities(this.downstream.clientCapabilities));
    } catch (err) {
      if (isCredentialMissing(err)) {
        this.missing = err;
        return;
      }
      throw openFailed(err);
    }
    if (this.closed) {
      await link.close().catch(() => undefined);
      return;
    }
    this.link = link;
    this.missing = undefined;
  }

  /** The link, opened now if the caller has since got a credential; else the credential error. */
  private async upstream(): Promise<UpstreamLink> {
    await this.open();
    if (this.link !== undefined) return this.link;
    throw credentialRequired(this.missing ?? new GatewayError("unavailable", "the upstream session is closed"));
  }

  /** Sends a request on upstream and answers with what comes back. */
  async relay(request: Request, call: RelayCall): Promise<Result> {
    // A session opened while the client took calls must stop once it refuses them (disabled, say), as /v1 does.
    const refusal = this.deps.refusal();
    if (refusal !== null) throw new McpError(ErrorCode.ConnectionClosed, refusal);
    // An open link is used as it is: waiting on open() would cost every request a turn.
    const link = this.link ?? (await this.upstream());
    const timeoutMs = this.deps.requestTimeoutMs();
    const entry = new InFlight(request.method, timeoutMs);
    const id = call.requestId;
    this.inFlight.set(id, entry);
    const cancelled = () => entry.controller.abort(call.signal.reason);
    call.signal.addEventListener("abort", cancelled, { once: true });
    const token = progressTokenOf(request);
    try {
      return await link.request(request, {
        signal: entry.controller.signal,
        ...(token !== undefined
          ? {
              onprogress: (progress) => {
                entry.progressed();
                void call.sendNotification({ method: "notifications/progress", params: { ...progress, progressToken: token } });
              },
            }
          : {}),
      });
    } catch (err) {
      throw relayedError(err, request.method, timeoutMs);
    } finally {
      entry.done();
      if (this.inFlight.get(id) === entry) this.inFlight.delete(id);
      call.signal.removeEventListener("abort", cancelled);
    }
  }

  /** Sends a notification of the downstream client on upstream; a shared process is not told one session's roots or other news. */
  async notify(notification: Notification): Promise<void> {
    if (this.link === undefined || this.link.shared) return;
    await this.link.notify(notification).catch((err: unknown) => this.deps.logger.debug({ err, method: notification.method }, "MCP relay: a notification did not reach the upstream"));
  }

  /** Gives up the requests a closed response stream carried. */
  abandon(requestIds: readonly RequestId[]): void {
    for (const id of requestIds) {
      const entry = this.inFlight.get(id);
      entry?.controller.abort(clientGone(entry.method));
    }
  }

  /** The newest request of this member at the upstream: server-to-client traffic is sent on its stream. */
  private newest(): [RequestId, InFlight] | undefined {
    let last: [RequestId, InFlight] | undefined;
    for (const entry of this.inFlight) last = entry;
    return last;
  }

  async serverRequest(request: Request, upstreamSignal: AbortSignal): Promise<Result> {
    const undeclared = undeclaredCapability(request.method, request.params, this.downstream.clientCapabilities);
    if (undeclared !== null) throw undeclared;
    if (this.downstream.pending >= MAX_PENDING_SERVER_REQUESTS) throw tooManyPending(request.method, MAX_PENDING_SERVER_REQUESTS);
    const related = this.newest();
    this.downstream.pending++;
    related?.[1].hold();
    const token = progressTokenOf(request);
    const timeoutMs = this.deps.serverRequestTimeoutMs();
    try {
      return await this.downstream.ask(request, {
        // The request it came during being cancelled or abandoned takes this one with it.
        signal: related === undefined ? upstreamSignal : AbortSignal.any([upstreamSignal, related[1].controller.signal]),
        timeout: timeoutMs,
        ...(related !== undefined ? { relatedRequestId: related[0] } : {}),
        ...(token !== undefined
          ? {
              onprogress: (progress) =>
                void this.link?.notify({ method: "notifications/progress", params: { ...progress, progressToken: token } }).catch(() => undefined),
            }
          : {}),
      });
    } catch (err) {
      throw relayedError(err, request.method, timeoutMs);
    } finally {
      this.downstream.pending--;
      related?.[1].release();
    }
  }

  serverNotification(notification: Notification): void {
    if (this.closed) return;
    const { method } = notification;
    // News about the server goes on the session's own stream; anything else during a request, on that request's.
    const standalone = method.endsWith("/list_changed") || method === "notifications/resources/updated" || method === "notifications/elicitation/complete";
    const related = standalone ? undefined : this.newest();
    this.downstream
      .tell(this, notification, related !== undefined ? { relatedRequestId: related[0] } : undefined)
      .catch((err: unknown) => this.deps.logger.debug({ err, method }, "MCP relay: a notification did not reach the client"));
  }

  upstreamLost(err: Error): void {
    this.downstream.lost(this, err);
  }

  /** Stops: requests in flight are cancelled upstream (the link stays until close()). */
  stop(): void {
    this.closed = true;
    for (const entry of this.inFlight.values()) entry.controller.abort(new McpError(ErrorCode.ConnectionClosed, "the MCP client session ended"));
  }

  /** Closes the link: the upstream session, or this session's share of a shared one. */
  async close(): Promise<void> {
    this.stop();
    const link = this.link;
    this.link = undefined;
    await link?.close().catch((err: unknown) => this.deps.logger.debug({ err }, "closing a relayed upstream session failed"));
  }
}
