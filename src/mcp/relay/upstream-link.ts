/**
 * The two sides of one /mcp/<client> session as the relay sees them: the link to the upstream (its own
 * session for http and sse clients, a share of the one process for stdio clients) and the sink the
 * upstream's messages for this session go to.
 */
import type { Implementation, Notification, Progress, Request, Result, ServerCapabilities } from "@modelcontextprotocol/sdk/types.js";

/** What the upstream answered at initialize. */
export interface UpstreamFacts {
  capabilities: ServerCapabilities;
  serverInfo: Implementation;
  instructions: string | undefined;
}

/** Options of one relayed request. */
export interface LinkRequestOptions {
  /** Aborting it cancels the request upstream (notifications/cancelled with the upstream's id). */
  signal: AbortSignal;
  /** Set when the downstream request carries a progress token: the upstream's progress, token removed. */
  onprogress?: (progress: Progress) => void;
}

/** One downstream session's way to its upstream. */
export interface UpstreamLink {
  readonly facts: UpstreamFacts;
  /** True when other sessions share the upstream: the client's own notifications then stay at the gateway. */
  readonly shared: boolean;
  /** Relays a request; the result as the upstream sent it. */
  request(request: Request, options: LinkRequestOptions): Promise<Result>;
  /** Sends a notification upstream. */
  notify(notification: Notification): Promise<void>;
  /** Ends this session's part: its upstream session, or its subscriptions and log level on a shared one. */
  close(): Promise<void>;
}

/** Where the upstream's messages for one downstream session go. */
export interface DownstreamSink {
  /** Requests of this session at the upstream now (a shared upstream ties server-to-client traffic by them). */
  readonly requestsInFlight: number;
  /** A server-to-client request; resolves with the downstream client's answer. `signal` aborts when the upstream cancels it. */
  serverRequest(request: Request, signal: AbortSignal): Promise<Result>;
  /** A server-to-client notification. */
  serverNotification(notification: Notification): void;
  /** The session's own upstream connection ended: the session ends too. */
  upstreamLost(err: Error): void;
}
