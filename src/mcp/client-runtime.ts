/**
 * One MCP client's live side: its upstream connection (sticky) or per-call sessions, the periodic
 * checker, and the state transitions of docs/mcp-gateway.md's state table. States and last_failure go to the
 * StateRegistry; every change is logged at INFO with stage and message, failed checks that change
 * nothing at DEBUG.
 */
import { GatewayError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { isPerCall, isPerUser, needsVerification, type McpClientSpec } from "./client-spec.js";
import type { ClientStateName, FailureStageName } from "./client-state.js";
import type { DiscoveredTool } from "./discover.js";
import type { StateRegistry } from "./state-registry.js";
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { OperationOptions, SessionFactory, ToolCallResult, UpstreamSession, UpstreamTarget } from "./upstream-session.js";
import { SHARED_CLIENT_CAPABILITIES } from "./relay/capabilities.js";
import { upstreamError } from "./upstream-errors.js";
import type { BearerSource } from "./oauth/bearer-fetch.js";
import { perUserWireHeaders } from "./wire-headers.js";

/** How often checks run and how hard each operation is retried. */
export interface RuntimeTiming {
  /** Between checks while healthy. */
  healthyCheckMs: number;
  /** Between checks while unstable. */
  unstableCheckMs: number;
  /** Attempts per operation inside one check. */
  retries: number;
  /** Pause between those attempts. */
  retryDelayMs: number;
  /** Bound on one connect, list, or ping. */
  operationTimeoutMs: number;
  /** The clock per-user submission flows expire by (tests move it instead of waiting 15 minutes). */
  now: () => number;
}

export const DEFAULT_TIMING: RuntimeTiming = {
  healthyCheckMs: 30_000,
  unstableCheckMs: 10_000,
  retries: 3,
  retryDelayMs: 500,
  operationTimeoutMs: 30_000,
  now: () => Date.now(),
};

/** What the runtime knows of a client's configuration. */
export interface ClientSnapshot {
  id: string;
  spec: McpClientSpec;
  verified: boolean;
  tools: DiscoveredTool[];
  discoveryHeaders: Record<string, string> | null;
  discoveryStatus: "active" | "needs_update" | null;
  /** Tool name -> the hash of its pinned definition (tool_pinning). */
  toolPins: Record<string, string>;
}

/** Services a ClientRuntime uses. */
export interface ClientRuntimeDeps {
  sessions: SessionFactory;
  states: StateRegistry;
  logger: Logger;
  timing: RuntimeTiming;
  /** The global tool sync interval in minutes (0 or negative: disabled). */
  globalSyncMinutes: () => number;
  /** Stores a changed tool list. */
  persistTools: (clientId: string, tools: DiscoveredTool[]) => Promise<void>;
  /** Decides what callers may see of a discovered tool list, before it is adopted; never rejects. */
  screenTools?: (clientId: string, tools: DiscoveredTool[]) => Promise<void>;
  /** Records that the upstream rejected a per-user client's admin discovery credential (it needs an update). */
  discoveryRejected?: (clientId: string) => Promise<void>;
  /** The OAuth token source of an oauth client's requests. */
  bearer?: (clientId: string) => BearerSource;
}

type Mode = "sticky" | "per_call" | "per_user";

/** The caller's own credential on a per-user call: header values (per_user_headers) or an OAuth token source (per_user_oauth). */
export interface CallerCredential {
  values?: Record<string, string>;
  bearer?: BearerSource;
}

function modeOf(spec: McpClientSpec): Mode {
  if (isPerUser(spec.authType)) return "per_user";
  return isPerCall(spec) ? "per_call" : "sticky";
}

function isAuthRejected(err: unknown): boolean {
  return err instanceof GatewayError && err.type === "upstream_auth_rejected";
}

function sameTools(a: readonly DiscoveredTool[], b: readonly DiscoveredTool[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** True when the change needs a new upstream connection. */
function connectionChanged(a: McpClientSpec, b: McpClientSpec): boolean {
  return (
    JSON.stringify([a.connectionType, a.connectionString, a.stdioConfig, a.authType, a.headers, a.needsSessionStickiness]) !==
    JSON.stringify([b.connectionType, b.connectionString, b.stdioConfig, b.authType, b.headers, b.needsSessionStickiness])
  );
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** The live side of one client. */
export class ClientRuntime {
  private snap: ClientSnapshot;
  private session: UpstreamSession | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** Bumped on stop and on every reconfiguration so stale async work drops its result. */
  private generation = 0;
  private lastSync = 0;
  private checkInFlight: Promise<void> | undefined;
  private closedByAdmin = false;

  constructor(
    snapshot: ClientSnapshot,
    private readonly deps: ClientRuntimeDeps,
  ) {
    this.snap = snapshot;
  }

  get id(): string {
    return this.snap.id;
  }
  get spec(): McpClientSpec {
    return this.snap.spec;
  }
  get tools(): readonly DiscoveredTool[] {
    return this.snap.tools;
  }
  get mode(): Mode {
    return modeOf(this.snap.spec);
  }
  /** False for a per_user_headers or oauth client whose one-time verification is not done. */
  get verified(): boolean {
    return this.snap.verified;
  }

  /** Whether anything should run for this client: not disabled, and verified when it must be. */
  private get active(): boolean {
    const { spec, verified } = this.snap;
    return !spec.disabled && !(needsVerification(spec.authType) && !verified);
  }

  private get state(): ClientStateName | undefined {
    return this.deps.states.stateOf(this.id)?.state;
  }

  private log(): Logger {
    return this.deps.logger;
  }

  /** The upstream of a call or check; `bearer` defaults to the client's own OAuth credential (oauth clients). */
  private target(headers = this.snap.spec.headers, bearer: BearerSource | undefined = this.snap.spec.authType === "oauth" ? this.deps.bearer?.(this.id) : undefined): UpstreamTarget {
    const { spec } = this.snap;
    return { connectionType: spec.connectionType, connectionString: spec.connectionString, stdioConfig: spec.stdioConfig, headers, ...(bearer ? { bearer } : {}) };
  }

  /**
   * The upstream of a per-user client's periodic discovery: the admin discovery credential (header values
   * over the static headers, or for per_user_oauth the admin's OAuth token); null without an active one.
   */
  private discoveryTarget(): UpstreamTarget | null {
    const { spec, discoveryHeaders, discoveryStatus } = this.snap;
    if (discoveryStatus !== "active") return null;
    if (spec.authType === "per_user_oauth") {
      const bearer = this.deps.bearer?.(this.id);
      return bearer ? this.target(spec.headers, bearer) : null;
    }
    if (!discoveryHeaders) return null;
    return this.target(perUserWireHeaders(spec.headers, spec.perUserHeaderKeys, discoveryHeaders));
  }

  private markHealthy(): void {
    const before = this.state;
    this.deps.states.succeeded(this.id);
    if (before !== "healthy") {
      this.log().info({ client_id: this.id, client: this.spec.name, from: before ?? null, to: "healthy" }, "MCP client state changed");
    }
  }

  private markFailed(stage: FailureStageName, err: unknown, to: ClientStateName = "unstable"): void {
    const before = this.state;
    const failure = this.deps.states.failed(this.id, stage, err, to);
    const fields = { client_id: this.id, client: this.spec.name, from: before ?? null, to, stage, message: failure.message };
    if (before !== to) this.log().info(fields, "MCP client state changed");
    else this.log().debug(fields, "MCP client check failed");
  }

  /** Runs `op` up to timing.retries times; an auth rejection is final at once. */
  private async retried<T>(op: () => Promise<T>): Promise<T> {
    let last: unknown;
    for (let attempt = 0; attempt < this.deps.timing.retries; attempt++) {
      try {
        return await op();
      } catch (err) {
        last = err;
        if (isAuthRejected(err)) break;
        if (attempt + 1 < this.deps.timing.retries) await sleep(this.deps.timing.retryDelayMs);
      }
    }
    throw last;
  }

  private syncDue(): boolean {
    const own = this.spec.toolSyncInterval;
    const minutes = own > 0 ? own : own < 0 ? -1 : this.deps.globalSyncMinutes();
    if (minutes <= 0) return false;
    return Date.now() - this.lastSync >= minutes * 60_000;
  }

  private async adoptTools(tools: DiscoveredTool[]): Promise<void> {
    this.lastSync = Date.now();
    // Before the list replaces the old one, so no caller sees a tool its guardrails and pins have not judged.
    await this.deps.screenTools?.(this.id, tools);
    if (sameTools(tools, this.snap.tools)) return;
    this.snap = { ...this.snap, tools };
    await this.deps.persistTools(this.id, tools).catch((err: unknown) => {
      this.log().error({ err, client_id: this.id }, "could not store the discovered tool list");
    });
  }

  private async discover(target: UpstreamTarget): Promise<DiscoveredTool[]> {
    const opts = { timeoutMs: this.deps.timing.operationTimeoutMs };
    const session = await this.deps.sessions.open(target, opts);
    try {
      return await session.listTools(opts);
    } finally {
      await session.close().catch(() => undefined);
    }
  }

  /**
   * Opens a connection to the client's own upstream. A stdio process is shared with the /mcp/<client>
   * relay, so it is told every client capability the relay can route to a downstream session.
   */
  private openSticky(opts: OperationOptions): Promise<UpstreamSession> {
    return this.deps.sessions.open(this.target(), this.spec.connectionType === "stdio" ? { ...opts, capabilities: SHARED_CLIENT_CAPABILITIES } : opts);
  }

  /** Opens a new sticky connection and swaps it in; the old one serves until the new one is ready. */
  private async redial(gen: number): Promise<void> {
    const opts = { timeoutMs: this.deps.timing.operationTimeoutMs };
    const fresh = await this.openSticky(opts);
    let tools: DiscoveredTool[];
    try {
      // A failed initial listing is a connect failure, never "healthy with zero tools".
      tools = await fresh.listTools(opts);
    } catch (err) {
      await fresh.close().catch(() => undefined);
      throw err;
    }
    if (gen !== this.generation) {
      await fresh.close().catch(() => undefined);
      return;
    }
    const old = this.session;
    this.session = fresh;
    fresh.onLost((err) => this.lost(fresh, err));
    // close() lets the calls still running on the old session finish before it closes.
    void old?.close().catch(() => undefined);
    await this.adoptTools(tools);
  }

  private lost(session: UpstreamSession, err: Error): void {
    if (this.session !== session || !this.running) return;
    this.session = undefined;
    this.markFailed("transport_lost", err);
    this.schedule(this.deps.timing.unstableCheckMs);
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), ms);
    this.timer.unref();
  }

  /**
   * Brings the client up for the first time: sticky clients dial, per-call clients run one discovery.
   * Resolves once the outcome is recorded (so creation can report it); never throws.
   */
  async start(): Promise<void> {
    if (!this.active) return;
    this.running = true;
    this.closedByAdmin = false;
    const gen = this.generation;
    try {
      await this.bringUp(gen);
      if (gen !== this.generation) return;
    } catch (err) {
      if (gen !== this.generation) return;
      this.fail("connect", err);
    }
    this.scheduleNext();
  }

  private async bringUp(gen: number): Promise<void> {
    const mode = this.mode;
    if (mode === "sticky") {
      await this.retried(() => this.redial(gen));
    } else if (mode === "per_call") {
      const tools = await this.retried(() => this.discover(this.target()));
      if (gen === this.generation) await this.adoptTools(tools);
    } else {
      // Per-user clients without an admin discovery credential stay healthy and do not refresh their tools.
      const target = this.discoveryTarget();
      if (target) {
        const tools = await this.retried(() => this.discover(target));
        if (gen === this.generation) await this.adoptTools(tools);
      }
    }
    if (gen === this.generation) this.markHealthy();
  }

  /**
   * Records a failure: an upstream credential rejection on a server-wide client stops the checker. On a
   * per-user client it means the admin discovery credential needs repair: it goes to needs_update (reads
   * project needs_reauth) and tool-list refresh pauses, while end-user calls go on with their own credentials.
   */
  private fail(stage: FailureStageName, err: unknown): void {
    if (isAuthRejected(err) && this.mode === "per_user" && this.snap.discoveryStatus === "active") {
      this.snap = { ...this.snap, discoveryStatus: "needs_update" };
      this.markFailed("credential", err);
      void this.deps.discoveryRejected?.(this.id).catch((cause: unknown) => {
        this.log().error({ err: cause, client_id: this.id }, "could not record the rejected admin discovery credential");
      });
      return;
    }
    if (isAuthRejected(err) && this.mode !== "per_user") {
      this.markFailed("credential", err, "needs_reauth");
      this.running = false;
      clearTimeout(this.timer);
      const session = this.session;
      this.session = undefined;
      void session?.close().catch(() => undefined);
      return;
    }
    this.markFailed(stage, err);
  }

  private scheduleNext(): void {
    if (!this.running) return;
    const state = this.state;
    if (this.mode === "per_user" && !this.discoveryTarget()) return; // nothing to check
    this.schedule(state === "healthy" ? this.deps.timing.healthyCheckMs : this.deps.timing.unstableCheckMs);
  }

  /** One periodic check (public for tests and for reconnect). */
  check(): Promise<void> {
    this.checkInFlight ??= this.runCheck().finally(() => {
      this.checkInFlight = undefined;
    });
    return this.checkInFlight;
  }

  private async runCheck(): Promise<void> {
    if (!this.running || this.closedByAdmin) return;
    const gen = this.generation;
    const mode = this.mode;
    let stage: FailureStageName = "tool_discovery";
    try {
      if (mode === "sticky") {
        const session = this.session;
        if (this.state === "healthy" && session) {
          stage = "ping";
          await this.retried(() => session.ping({ timeoutMs: this.deps.timing.operationTimeoutMs }));
          if (this.syncDue()) {
            stage = "list_tools";
            const tools = await this.retried(() => session.listTools({ timeoutMs: this.deps.timing.operationTimeoutMs }));
            if (gen === this.generation) await this.adoptTools(tools);
          }
        } else {
          stage = "connect";
          await this.retried(() => this.redial(gen));
        }
      } else {
        const target = mode === "per_call" ? this.target() : this.discoveryTarget();
        if (target) {
          const tools = await this.retried(() => this.discover(target));
          if (gen === this.generation && (this.syncDue() || this.snap.tools.length === 0)) await this.adoptTools(tools);
        }
      }
      if (gen !== this.generation) return;
      this.markHealthy();
    } catch (err) {
      if (gen !== this.generation) return;
      this.fail(stage, err);
    }
    this.scheduleNext();
  }

  /** Applies a new configuration; re-dials (make-before-break) when the connection settings changed. */
  async update(next: ClientSnapshot): Promise<void> {
    const prev = this.snap;
    const wasActive = this.active;
    const reconnect = connectionChanged(prev.spec, next.spec) || prev.discoveryStatus !== next.discoveryStatus || prev.verified !== next.verified;
    this.snap = { ...next, tools: next.tools.length > 0 ? next.tools : prev.tools };
    if (!this.active) {
      await this.stop();
      return;
    }
    if (!wasActive || (reconnect && this.mode !== "sticky") || !this.running) {
      if (this.running) await this.stop();
      this.deps.states.remove(this.id);
      await this.start();
      return;
    }
    if (reconnect) await this.reconnect();
  }

  /** Re-dials a sticky client now; the old connection serves until the new one is ready. */
  async reconnect(): Promise<void> {
    this.generation++;
    this.running = true;
    this.closedByAdmin = false;
    clearTimeout(this.timer);
    const gen = this.generation;
    try {
      await this.retried(() => this.redial(gen));
      if (gen === this.generation) this.markHealthy();
    } catch (err) {
      if (gen === this.generation) this.fail("connect", err);
      throw err;
    } finally {
      if (gen === this.generation) this.scheduleNext();
    }
  }

  /**
   * The OAuth credential died outside a check (a tool call's refresh was refused): the client goes to
   * needs_reauth and its checker stops, as when a check is rejected.
   */
  credentialDied(message: string): void {
    if (!this.running || this.state === "needs_reauth") return;
    this.fail("credential", new GatewayError("unavailable", message, { type: "upstream_auth_rejected" }));
  }

  /**
   * A new OAuth credential replaced the old one: a sticky connection is re-dialed (the old one serves
   * until the new one is up); a client that was stopped (needs_reauth) starts again.
   */
  async credentialRenewed(): Promise<void> {
    if (!this.active) return;
    if (this.running && this.mode === "sticky" && this.session) {
      await this.reconnect();
      return;
    }
    if (this.running) await this.stop();
    this.deps.states.remove(this.id);
    await this.start();
  }

  /** Closes the persistent connection and pauses the checker until a reconnect. */
  async closeConnection(): Promise<void> {
    this.closedByAdmin = true;
    clearTimeout(this.timer);
    const session = this.session;
    this.session = undefined;
    await session?.close().catch(() => undefined);
    this.markFailed("transport_lost", new Error("the connection was closed by an admin; POST /api/mcp/client/{id}/reconnect re-dials it"));
  }

  /**
   * Stops the checker and closes the connection; calls in flight on it finish first, unless `cutCalls` (a
   * deleted client: nothing of it should outlive the delete, which would otherwise wait on its slowest call).
   */
  async stop(opts: { cutCalls?: boolean } = {}): Promise<void> {
    this.generation++;
    this.running = false;
    clearTimeout(this.timer);
    const session = this.session;
    this.session = undefined;
    await (opts.cutCalls ? session?.closeNow() : session?.close())?.catch(() => undefined);
  }

  /**
   * Calls one tool within the deadline of `signal`. A per-user client needs the caller's credential
   * (header values merged with the static headers, or an OAuth token), which goes on this
   * call's fresh session only.
   * `traceparent` goes along in the request's `_meta`, where MCP servers read trace context.
   */
  async call(tool: string, args: Record<string, unknown>, timeoutMs: number, signal: AbortSignal, caller?: CallerCredential, traceparent?: string): Promise<ToolCallResult> {
    if (this.mode === "sticky") {
      let session = this.session;
      let temporary = false;
      if (!session) {
        // Unstable clients are still tried: dial on demand and keep the connection for the next calls.
        const opened = await this.openSticky({ timeoutMs, signal });
        if (this.session) {
          await opened.close().catch(() => undefined);
          session = this.session;
        } else if (this.running && !this.closedByAdmin) {
          this.session = opened;
          opened.onLost((err) => this.lost(opened, err));
          session = opened;
        } else {
          session = opened;
          temporary = true;
        }
      }
      try {
        return await session.callTool(tool, args, { timeoutMs, signal, ...(traceparent ? { traceparent } : {}) });
      } finally {
        if (temporary) await session.close().catch(() => undefined);
      }
    }
    const session = await this.deps.sessions.open(this.callerTarget(caller), { timeoutMs, signal });
    try {
      return await session.callTool(tool, args, { timeoutMs, signal, ...(traceparent ? { traceparent } : {}) });
    } finally {
      await session.close().catch(() => undefined);
    }
  }

  /** The upstream of a call: a per-user client's carries the caller's credential, which it must have. */
  private callerTarget(caller: CallerCredential | undefined): UpstreamTarget {
    if (this.mode !== "per_user") return this.target();
    if (caller?.bearer) return this.target(this.spec.headers, caller.bearer);
    if (caller?.values) return this.target(perUserWireHeaders(this.spec.headers, this.spec.perUserHeaderKeys, caller.values));
    throw new GatewayError("internal", `per-user client "${this.spec.name}" was called without the caller's credential`);
  }

  /**
   * Opens a session of the caller's own with an http or sse upstream (the /mcp/<client> relay keeps one per
   * downstream session), declaring `capabilities`; a per-user client's carries the caller's credential.
   */
  openFor(caller: CallerCredential | undefined, capabilities: ClientCapabilities, opts: OperationOptions): Promise<UpstreamSession> {
    return this.deps.sessions.open(this.callerTarget(caller), { ...opts, capabilities });
  }

  /**
   * The one connection of a sticky client, which the /mcp/<client> relay shares among its sessions (stdio):
   * dialled now, and kept, when there is none; refused while the client is stopped or closed by an admin.
   */
  async sharedSession(opts: OperationOptions): Promise<UpstreamSession> {
    if (this.session) return this.session;
    if (this.mode !== "sticky" || !this.running || this.closedByAdmin) {
      throw upstreamError(`MCP client "${this.spec.name}" has no live connection to share (it is stopped, or an admin closed it; POST /api/mcp/client/{id}/reconnect re-dials it)`);
    }
    const opened = await this.openSticky(opts);
    if (this.session) {
      await opened.close().catch(() => undefined);
      return this.session;
    }
    this.session = opened;
    opened.onLost((err) => this.lost(opened, err));
    return opened;
  }
}
