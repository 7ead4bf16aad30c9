/**
 * Sessions with upstream MCP servers over http, sse and stdio: open (connect + initialize), list tools,
 * call a tool, ping, close. Every failure is a GatewayError typed for the runtime (auth rejected,
 * timeout, other); every operation is bounded by its timeout and the caller's signal. The factory owns
 * the keep-alive pool shared by all http/sse sessions and closes whatever is still open.
 */
import { egressAgent, egressFetchVia } from "../config/egress-connections.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../telemetry/logger.js";
import { withDeadline } from "./deadline.js";
import { LegacySseTransport } from "./legacy-sse-transport.js";
import { OversizedMessageError } from "./message-bound.js";
import { bearerFetch, type BearerSource } from "./oauth/bearer-fetch.js";
import { stdioEnvironment } from "./stdio-environment.js";
import { ChildProcessTransport } from "./stdio-transport.js";
import { toolResultText } from "./tool-result.js";
import { upstreamError, upstreamMessage } from "./upstream-errors.js";
import { untiedRequest } from "./relay/relay-errors.js";
import { UpstreamHttpTransport } from "./relay/upstream-http-transport.js";

/** A tool as discovered upstream. */
export interface DiscoveredTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** The hints a retry decision reads, present only when the server declared one. */
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean };
}

/** The retry-relevant annotations of a listed tool, or undefined when it declares none. */
function retryHints(annotations: { readOnlyHint?: boolean | undefined; idempotentHint?: boolean | undefined } | undefined): DiscoveredTool["annotations"] {
  if (!annotations) return undefined;
  const out: NonNullable<DiscoveredTool["annotations"]> = {};
  if (typeof annotations.readOnlyHint === "boolean") out.readOnlyHint = annotations.readOnlyHint;
  if (typeof annotations.idempotentHint === "boolean") out.idempotentHint = annotations.idempotentHint;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Where and how to reach one upstream MCP server. */
export interface UpstreamTarget {
  connectionType: "http" | "sse" | "stdio";
  /** http/sse URL. */
  connectionString: string | null;
  stdioConfig: { command: string; args: string[]; envs: string[] } | null;
  /** Sent on every request of the session (http and sse, GET stream and POSTs). */
  headers: Record<string, string>;
  /** An OAuth token source: its token goes on every request as Authorization: Bearer (http and sse). */
  bearer?: BearerSource;
}

/** A tool call's outcome; a tool-level error (isError) is a result, not a thrown error. */
export interface ToolCallResult {
  /** Text parts joined with "\n"; other parts as compact JSON. */
  content: string;
  isError: boolean;
  /** The SDK's CallToolResult as received (as a tool_output guardrail left it). */
  raw: unknown;
  /** `<name>=<verdict>,...` of every guardrail that looked at the call (the x-gw-guardrails header); absent when none did. */
  guardrails?: string;
}

/** Timeout and cancellation of one operation. */
export interface OperationOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** W3C trace context of the caller's span, sent in a tools/call's `_meta`. */
  traceparent?: string;
}

/** How a session is opened. */
export interface OpenOptions extends OperationOptions {
  /**
   * The client capabilities declared at initialize (default none). A session that declares any takes
   * server-to-client requests: the /mcp/<client> relay answers them, and until it does they fail with -32603.
   */
  capabilities?: ClientCapabilities;
}

/** One initialized MCP session with an upstream. */
export interface UpstreamSession {
  /** The SDK client of the session, through which the /mcp/<client> relay carries the whole protocol. */
  readonly sdkClient: Client;
  /** The gateway's own operations (tool calls, lists, pings) running on the session now. */
  operationsInFlight(): number;
  /** Every page of the tool list (bounded). */
  listTools(opts: OperationOptions): Promise<DiscoveredTool[]>;
  /** Calls one tool; a result with isError true is returned, not thrown. */
  callTool(name: string, args: Record<string, unknown>, opts: OperationOptions): Promise<ToolCallResult>;
  /** An MCP ping round trip. */
  ping(opts: OperationOptions): Promise<void>;
  /**
   * Idempotent; refuses new operations at once, lets operations in flight finish (each within its own
   * timeout), then closes the connection, killing a stdio child and waiting for it to exit.
   */
  close(): Promise<void>;
  /** As close(), without letting operations in flight finish: they fail as the connection goes. */
  closeNow(): Promise<void>;
  /** Registers a callback run once if the connection ends without close(): SSE stream dropped, stdio process exited. */
  onLost(callback: (err: Error) => void): void;
}

/** Opens sessions and owns what they share. */
export interface SessionFactory {
  /** Connects and initializes. */
  open(target: UpstreamTarget, opts: OpenOptions): Promise<UpstreamSession>;
  /** Closes every session still open without waiting for calls in flight, then the keep-alive pool (no orphan children). */
  close(): Promise<void>;
}

/** A server that pages forever is cut off after this many pages. */
const MAX_TOOL_PAGES = 1000;
/** How long close() waits for a DELETE of the MCP session, and then for a child's exit after the SDK's kill. */
const CLOSE_STEP_MS = 2000;

const CLIENT_INFO = { name: "gw", version: "0.1.0" };

type SessionState = "opening" | "open" | "lost" | "closed";

class McpUpstreamSession implements UpstreamSession {
  private readonly client: Client;
  private state: SessionState = "opening";
  private lostError: Error | undefined;
  private readonly lostCallbacks: Array<(err: Error) => void> = [];
  private closing: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Aborted to stop close() from waiting for calls in flight (factory shutdown). */
  private readonly cutDrain = new AbortController();

  constructor(
    private readonly transport: Transport,
    private readonly label: string,
    private readonly logger: Logger,
    private readonly forget: (session: McpUpstreamSession) => void,
    capabilities: ClientCapabilities = {},
  ) {
    this.client = new Client(CLIENT_INFO, { capabilities });
    if (Object.keys(capabilities).length > 0) {
      this.client.fallbackRequestHandler = async (request) => {
        throw untiedRequest(request.method);
      };
    }
    transport.onclose = () => {
      if (transport instanceof ChildProcessTransport) transport.markExited();
      this.connectionEnded(new Error(transport instanceof ChildProcessTransport ? "the stdio process exited" : "the connection closed"));
    };
    transport.onerror = (err) => {
      // A stdio line or legacy SSE event over the bound that answered no pending request is dropped; the connection goes on.
      if (err instanceof OversizedMessageError) this.logger.warn({ upstream: this.label, err: err.message }, "upstream message dropped");
      // After open, an SseError can only come from the GET stream: it dropped, and the eventsource
      // package would silently reconnect to a new, uninitialized server session.
      if (err instanceof SseError && this.state === "open") this.connectionEnded(new Error(`the SSE stream dropped: ${err.message}`));
    };
  }

  get sdkClient(): Client {
    return this.client;
  }

  operationsInFlight(): number {
    return this.inFlight.size;
  }

  /** Connects and initializes within the deadline. */
  async connect(opts: OperationOptions): Promise<void> {
    await withDeadline(
      `initialize ${this.label}`,
      opts,
      (signal) => this.client.connect(this.transport, { signal, timeout: opts.timeoutMs }),
      () => this.hint(),
    );
    // A factory shutdown may have closed the session while it was connecting.
    if (this.state === "opening") this.state = "open";
  }

  async listTools(opts: OperationOptions): Promise<DiscoveredTool[]> {
    this.assertUsable("tools/list");
    return this.track(withDeadline(
      "tools/list",
      opts,
      async (signal) => {
        const tools: DiscoveredTool[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_TOOL_PAGES; page++) {
          const result = await this.client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: opts.timeoutMs });
          for (const tool of result.tools) {
            const hints = retryHints(tool.annotations);
            tools.push({ name: tool.name, description: tool.description ?? "", inputSchema: tool.inputSchema as Record<string, unknown>, ...(hints ? { annotations: hints } : {}) });
          }
          cursor = result.nextCursor;
          if (!cursor) return tools;
        }
        this.logger.warn({ upstream: this.label, pages: MAX_TOOL_PAGES }, "upstream tool list still paging; keeping the tools read so far");
        return tools;
      },
      () => this.hint(),
    ));
  }

  async callTool(name: string, args: Record<string, unknown>, opts: OperationOptions): Promise<ToolCallResult> {
    this.assertUsable(`tools/call ${name}`);
    return this.track(withDeadline(
      `tools/call ${name}`,
      opts,
      async (signal) => {
        const params = opts.traceparent === undefined ? { name, arguments: args } : { name, arguments: args, _meta: { traceparent: opts.traceparent } };
        const raw = await this.client.callTool(params, undefined, { signal, timeout: opts.timeoutMs });
        return { content: toolResultText(raw), isError: raw.isError === true, raw };
      },
      () => this.hint(),
    ));
  }

  async ping(opts: OperationOptions): Promise<void> {
    this.assertUsable("ping");
    await this.track(withDeadline("ping", opts, async (signal) => void (await this.client.ping({ signal, timeout: opts.timeoutMs })), () => this.hint()));
  }

  onLost(callback: (err: Error) => void): void {
    const lost = this.lostError;
    if (lost) queueMicrotask(() => callback(lost));
    else this.lostCallbacks.push(callback);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /** Closes without letting calls in flight finish: they fail as the connection goes. */
  closeNow(): Promise<void> {
    this.cutDrain.abort();
    return this.close();
  }

  private track<T>(operation: Promise<T>): Promise<T> {
    this.inFlight.add(operation);
    operation.finally(() => this.inFlight.delete(operation)).catch(() => undefined);
    return operation;
  }

  private async shutdown(): Promise<void> {
    const wasOpen = this.state === "open";
    this.state = "closed";
    this.lostCallbacks.length = 0;
    if (wasOpen && this.inFlight.size > 0 && !this.cutDrain.signal.aborted) {
      // A re-dial swaps in a new session and closes the old one while calls may still run on it.
      const cut = new Promise<void>((resolve) => this.cutDrain.signal.addEventListener("abort", () => resolve(), { once: true }));
      await Promise.race([Promise.allSettled([...this.inFlight]), cut]);
    }
    const transport = this.transport;
    if (transport instanceof UpstreamHttpTransport && transport.sessionId !== undefined) {
      // Tell a stateful server the session is over; a server that hangs must not hang close().
      await Promise.race([transport.terminateSession().catch(() => undefined), delay(CLOSE_STEP_MS)]);
    }
    await this.client.close().catch((err: unknown) => this.logger.debug({ upstream: this.label, err: upstreamMessage(err) }, "closing upstream session failed"));
    if (transport instanceof ChildProcessTransport) await this.reap(transport);
    this.forget(this);
  }

  /** Waits for the child the SDK just stopped; SIGKILLs it if it still has not exited. */
  private async reap(transport: ChildProcessTransport): Promise<void> {
    if (await transport.waitForExit(CLOSE_STEP_MS)) return;
    const pid = transport.childPid;
    this.logger.warn({ upstream: this.label, pid }, "stdio upstream did not exit after SIGTERM; sending SIGKILL");
    try {
      if (pid !== undefined) process.kill(pid, "SIGKILL");
    } catch {
      // Already gone between the check and the kill.
    }
    await transport.waitForExit(CLOSE_STEP_MS);
  }

  private connectionEnded(err: Error): void {
    if (this.state !== "open") return;
    const hint = this.hint();
    const lost = new Error(upstreamMessage(hint ? `${err.message} (${hint})` : err.message));
    this.state = "lost";
    this.lostError = lost;
    this.logger.info({ upstream: this.label, err: lost.message }, "upstream connection lost");
    // Stop the SDK from reconnecting behind our back (SSE) and fail pending requests now.
    void this.client.close().catch(() => undefined);
    for (const callback of this.lostCallbacks.splice(0)) {
      try {
        callback(lost);
      } catch (cbErr) {
        this.logger.error({ upstream: this.label, err: upstreamMessage(cbErr) }, "onLost callback threw");
      }
    }
  }

  private assertUsable(what: string): void {
    if (this.state === "closed") throw upstreamError(`${what}: the upstream session is closed; open a new one`);
    if (this.state === "lost") throw upstreamError(`${what}: the upstream connection was lost (${this.lostError?.message ?? "unknown"}); open a new session`);
  }

  /** What a failure's message adds: why the connection ended (calls in flight fail only with "Connection closed"), or a child's stderr. */
  private hint(): string | undefined {
    if (this.lostError !== undefined) return this.lostError.message;
    if (!(this.transport instanceof ChildProcessTransport)) return undefined;
    const tail = this.transport.stderrTail();
    return tail ? `stderr: ${tail}` : undefined;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Rewrites a spawn error into a message naming the command, so a typo reads as such rather than as a bare ENOENT. */
function describeSpawnFailure(err: unknown, command: string): Error | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "ENOENT") return new Error(`stdio command "${command}" was not found: check stdio_config.command and the gateway's PATH`);
  if (code === "EACCES") return new Error(`stdio command "${command}" is not executable (EACCES)`);
  return undefined;
}

/** Creates a factory; `env` (default process.env) is where stdio_config.envs values come from. */
export function createSessionFactory(opts: { logger: Logger; env?: NodeJS.ProcessEnv }): SessionFactory {
  const logger = opts.logger.child({ component: "mcp-upstream" });
  const env = opts.env ?? process.env;
  // Every connection, to the configured URL, an SSE endpoint it announces or a redirect target, obeys network.egress.
  const agent = egressAgent();
  const fetch = egressFetchVia(agent);
  const sessions = new Set<McpUpstreamSession>();
  let closed = false;

  function transportFor(target: UpstreamTarget): { transport: Transport; label: string } {
    if (target.connectionType === "stdio") {
      const cfg = target.stdioConfig;
      if (!cfg || cfg.command.length === 0) throw upstreamError("stdio client has no stdio_config.command");
      const childEnv = stdioEnvironment(cfg.envs, env);
      return { transport: new ChildProcessTransport({ command: cfg.command, args: cfg.args, env: childEnv }, logger), label: `stdio ${cfg.command}` };
    }
    if (!target.connectionString) throw upstreamError(`${target.connectionType} client has no connection_string`);
    let url: URL;
    try {
      url = new URL(target.connectionString);
    } catch {
      throw upstreamError(`connection_string "${target.connectionString}" is not a valid URL`);
    }
    const label = `${target.connectionType} ${url.origin}${url.pathname}`;
    // Streamable HTTP goes through the gateway's own transport on undici's dispatcher: the SDK's, on fetch,
    // web streams and an abort signal per request, cost a tool call far more CPU (bench/RESULTS.md).
    if (target.connectionType === "http") {
      return { transport: new UpstreamHttpTransport({ url, headers: target.headers, dispatcher: agent, ...(target.bearer ? { bearer: target.bearer } : {}) }), label };
    }
    return { transport: new LegacySseTransport(url, target.headers, target.bearer ? bearerFetch(fetch, target.bearer) : fetch), label };
  }

  return {
    async open(target, openOpts) {
      if (closed) throw upstreamError("the upstream session factory is closed (the gateway is shutting down)");
      const { transport, label } = transportFor(target);
      const session = new McpUpstreamSession(transport, label, logger, (s) => sessions.delete(s), openOpts.capabilities);
      sessions.add(session);
      try {
        await session.connect(openOpts);
      } catch (err) {
        // Reaping a child can take seconds (stdin end, SIGTERM, SIGKILL); the caller's deadline has passed,
        // so it proceeds in the background and factory.close() still waits for it.
        session.close().catch((closeErr: unknown) => logger.warn({ upstream: label, err: upstreamMessage(closeErr) }, "cleanup after a failed open failed"));
        const spawnFailure = target.stdioConfig ? describeSpawnFailure((err as { cause?: unknown }).cause, target.stdioConfig.command) : undefined;
        if (spawnFailure) throw upstreamError(spawnFailure.message, err);
        throw err;
      }
      if (closed) {
        await session.close();
        throw upstreamError("the upstream session factory is closed (the gateway is shutting down)");
      }
      return session;
    },

    async close() {
      closed = true;
      await Promise.allSettled([...sessions].map((s) => s.closeNow()));
      // Sessions are closed, so nothing should be in flight; destroy whatever a stuck request holds.
      await Promise.race([agent.close(), delay(CLOSE_STEP_MS)]);
      await agent.destroy().catch(() => undefined);
    },
  };
}
