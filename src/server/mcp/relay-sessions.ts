/**
 * The live sessions of /mcp/<client> and of virtual servers, both transports: each bound to the caller
 * that opened it and to the name of its path, closed (with its upstream sessions) when it ends or idles.
 */
import type { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import type { DownstreamSession } from "../../mcp/relay/downstream-protocol.js";
import type { McpCaller } from "../../services/mcp-server-tools.js";
import type { Logger } from "../../telemetry/logger.js";
import { LiveSession } from "./live-session.js";
import type { RelayHttpTransport } from "./relay-http-transport.js";

/** The downstream transport of a session. */
export type RelayTransport = { kind: "streamable_http"; transport: RelayHttpTransport } | { kind: "sse"; transport: SSEServerTransport };

/** One live relayed session. */
export class RelayEntry extends LiveSession {
  constructor(
    readonly id: string,
    readonly clientName: string,
    readonly downstream: RelayTransport,
    readonly owner: string,
    readonly relay: DownstreamSession,
    caller: McpCaller,
  ) {
    super(caller);
  }
}

/** The table of relayed sessions. */
export class RelaySessions {
  private readonly sessions = new Map<string, RelayEntry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly logger: Logger,
    private readonly idleTimeoutMs: number,
  ) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(60_000, Math.max(1_000, Math.floor(idleTimeoutMs / 2))));
    this.sweeper.unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  add(entry: RelayEntry): void {
    this.sessions.set(entry.id, entry);
    this.logger.info({ client: entry.clientName, transport: entry.downstream.kind, sessions: this.sessions.size }, "MCP relay session opened");
  }

  /** The session `id` names if `owner` opened it on `clientName`; any other is as unknown as a missing one. */
  find(id: string, owner: string, clientName: string): RelayEntry | undefined {
    const entry = this.sessions.get(id);
    return entry !== undefined && entry.owner === owner && entry.clientName === clientName ? entry : undefined;
  }

  /** Forgets a closed session. */
  remove(id: string): void {
    const entry = this.sessions.get(id);
    if (entry === undefined) return;
    this.sessions.delete(id);
    this.logger.info({ client: entry.clientName, sessions: this.sessions.size }, "MCP relay session closed");
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.idleTimeoutMs;
    for (const entry of this.sessions.values()) {
      if (entry.openStreams > 0 || entry.lastSeen > cutoff || entry.relay.requestsInFlight > 0) continue;
      this.logger.info({ client: entry.clientName, transport: entry.downstream.kind }, "closing an idle MCP relay session");
      this.sessions.delete(entry.id);
      void entry.relay.close();
    }
  }

  /**
   * Tells sessions that what they may list may have changed: every session its tools, or with `name` only
   * the sessions of /mcp/<name> and everything they list (a virtual server's edit changes its prompts and
   * resources too).
   */
  listsChanged(name: string | null): void {
    for (const entry of this.sessions.values()) {
      if (name === null || entry.clientName === name) entry.relay.listsChanged(name !== null);
    }
  }

  /** Closes the sessions of names `exists` no longer knows (a deleted client or virtual server), so they hold no slot or upstream session. */
  closeGone(exists: (name: string) => boolean): void {
    for (const entry of this.sessions.values()) {
      if (exists(entry.clientName)) continue;
      this.logger.info({ client: entry.clientName, transport: entry.downstream.kind }, "closing an MCP relay session: its MCP client or virtual server was deleted");
      this.sessions.delete(entry.id);
      void entry.relay.close();
    }
  }

  /** Closes every session (shutdown). */
  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((entry) => entry.relay.close().catch(() => undefined)));
  }
}
