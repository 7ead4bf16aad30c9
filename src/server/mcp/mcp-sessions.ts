/**
 * The live sessions of the gateway's MCP endpoint, both transports: each bound to the caller that opened
 * it, bounded in number, closed when idle, and told when the caller's tool list changes.
 */
import { randomBytes } from "node:crypto";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import { jsonRpcKind } from "../../mcp/json-rpc-kind.js";
import type { McpCaller, McpServerTools } from "../../services/mcp-server-tools.js";
import type { Logger } from "../../telemetry/logger.js";
import { LiveSession } from "./live-session.js";

/** Limits of the session table. */
export interface McpSessionLimits {
  /** Live sessions at most; a new one past this gets 503 (default 1000). */
  maxSessions: number;
  /** A session with no request and no open stream for this long is closed (default 30 minutes). */
  idleTimeoutMs: number;
}

export const DEFAULT_SESSION_LIMITS: McpSessionLimits = { maxSessions: 1000, idleTimeoutMs: 30 * 60_000 };

/** Something a session can be closed through (either SDK transport). */
interface Closable {
  close(): Promise<void>;
}

/** One live session. */
export class McpSession extends LiveSession {
  /** The tool list last shown or announced, to tell whether a change concerns this session. */
  toolSignature: string;

  constructor(
    readonly id: string,
    readonly transportKind: "streamable_http" | "sse",
    readonly owner: string,
    readonly server: Server,
    readonly transport: Closable,
    caller: McpCaller,
    toolSignature: string,
  ) {
    super(caller);
    this.toolSignature = toolSignature;
  }

  /**
   * Ids of the session's requests not answered yet (Streamable HTTP): the SDK's transport routes an answer
   * by its id alone, so a second request under one of them would take the first one's answer stream.
   */
  private readonly unanswered = new Set<RequestId>();

  /** True while the request of this id waits for its answer. */
  inFlight(id: RequestId): boolean {
    return this.unanswered.has(id);
  }

  /** Records the requests among `messages`, and forgets those a cancellation of the client ends (they get no answer). */
  received(messages: readonly unknown[]): void {
    for (const message of messages) {
      const kind = jsonRpcKind(message);
      if (kind === "request") this.unanswered.add((message as { id: RequestId }).id);
      else if (kind === "notification" && (message as { method: string }).method === "notifications/cancelled") {
        const requestId = (message as { params?: { requestId?: unknown } }).params?.requestId;
        if (typeof requestId === "string" || typeof requestId === "number") this.unanswered.delete(requestId);
      }
    }
  }

  /** The request of this id got its answer (or the transport could not deliver it). */
  answered(id: RequestId): void {
    this.unanswered.delete(id);
  }
}

/** A random session id: 256 bits, URL- and header-safe. */
export function newSessionId(): string {
  return randomBytes(32).toString("base64url");
}

/** The signature of a tool list: changes whenever a name, description or schema does. */
export function toolSignature(tools: readonly unknown[]): string {
  return JSON.stringify(tools);
}

/** The session table. */
export class McpSessions {
  private readonly sessions = new Map<string, McpSession>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly unwatch: () => void;
  private checkQueued = false;

  constructor(
    private readonly tools: McpServerTools,
    private readonly logger: Logger,
    readonly limits: McpSessionLimits,
  ) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(60_000, Math.max(1_000, Math.floor(limits.idleTimeoutMs / 2))));
    this.sweeper.unref();
    this.unwatch = tools.onToolsChanged(() => this.queueCheck());
  }

  get size(): number {
    return this.sessions.size;
  }

  add(session: McpSession): void {
    this.sessions.set(session.id, session);
    this.logger.info({ transport: session.transportKind, sessions: this.sessions.size }, "MCP session opened");
  }

  /** The session `id` names if `owner` opened it; another caller's session is as unknown as a missing one. */
  find(id: string, owner: string): McpSession | undefined {
    const session = this.sessions.get(id);
    return session !== undefined && session.owner === owner ? session : undefined;
  }

  /** Forgets a closed session. */
  remove(id: string): void {
    if (this.sessions.delete(id)) this.logger.info({ sessions: this.sessions.size }, "MCP session closed");
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.limits.idleTimeoutMs;
    for (const session of this.sessions.values()) {
      if (session.openStreams > 0 || session.lastSeen > cutoff) continue;
      this.logger.info({ transport: session.transportKind }, "closing an idle MCP session");
      this.close(session);
    }
  }

  private close(session: McpSession): void {
    this.sessions.delete(session.id);
    session.transport.close().catch((err: unknown) => this.logger.debug({ err }, "closing an MCP session failed"));
  }

  /** Coalesces change events: one check per turn of the event loop. */
  private queueCheck(): void {
    if (this.checkQueued) return;
    this.checkQueued = true;
    setImmediate(() => {
      this.checkQueued = false;
      this.announceChanges();
    });
  }

  /** Sends notifications/tools/list_changed to each session whose caller's tool list is no longer what it was. */
  private announceChanges(): void {
    for (const session of this.sessions.values()) {
      const signature = toolSignature(this.tools.list(session.caller));
      if (signature === session.toolSignature) continue;
      session.toolSignature = signature;
      session.server.sendToolListChanged().catch((err: unknown) => this.logger.debug({ err }, "could not send tools/list_changed"));
    }
  }

  /** Closes every session (shutdown). */
  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    this.unwatch();
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((s) => s.transport.close().catch(() => undefined)));
  }
}
