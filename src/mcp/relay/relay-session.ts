/**
 * One downstream session of /mcp/<client>, relayed at the JSON-RPC level: the SDK's Protocol on each side
 * keeps its own request ids, so every request is sent on with the other side's id, its progress token
 * swapped for one of the upstream link's and swapped back here, and its cancellation carried by an abort
 * signal (the Protocol sends notifications/cancelled with the id of its side). Results,
 * content blocks, `_meta` and errors pass unchanged; only tools/list and tools/call are filtered by what
 * the caller may use. A server-to-client request goes to this session's client, tied to the request it
 * came during, bounded in number and in time.
 */
import { randomUUID } from "node:crypto";
import { Protocol, type RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  LATEST_PROTOCOL_VERSION,
  McpError,
  ErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type ClientCapabilities,
  type InitializeResult,
  type JSONRPCRequest,
  type Notification,
  type Request,
  type RequestId,
  type Result,
} from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../errors.js";
import type { Logger } from "../../telemetry/logger.js";
import type { McpErrorType } from "../../telemetry/metrics.js";
import { McpAuthRequiredError } from "../credentials/auth-required.js";
import type { DiscoveredTool } from "../discover.js";
import { ANY_RESULT } from "./any-result.js";
import { relayedClientCapabilities, undeclaredCapability } from "./capabilities.js";
import { clientGone, credentialRequired, openFailed, relayedError, relayTimeout, tooManyPending } from "./relay-errors.js";
import { MAX_PENDING_SERVER_REQUESTS, SERVER_REQUEST_TIMEOUT_MS } from "./relay-limits.js";
import type { DownstreamSink, UpstreamFacts, UpstreamLink } from "./upstream-link.js";

/** The caller of one tools/list or tools/call, as the relay needs it. */
export interface RelayCaller {
  /** Whether the caller may see and call the tool (tools_to_execute, the key's mcp_configs, the include headers). */
  toolVisible(tool: string): boolean;
  /** Measures one relayed request: its JSON-RPC method and, for tools/call, the tool ("" otherwise). */
  operationDone(method: string, tool: string, durationS: number, errorType: McpErrorType): void;
}

/** What a session needs from the gateway. */
export interface RelaySessionDeps {
  clientName: string;
  logger: Logger;
  /** Opens this session's way to the upstream, declaring `capabilities`; throws when a per-user credential is missing. */
  connect(sink: DownstreamSink, capabilities: ClientCapabilities): Promise<UpstreamLink>;
  /** The caller of a tools/list or tools/call of this session. */
  callerOf(requestId: RequestId): RelayCaller;
  /** The client's last discovered tools, listed while the caller has no credential. */
  cachedTools(): readonly DiscoveredTool[];
  /** What the upstream last answered at initialize, announced while the caller has no credential. */
  knownFacts(): UpstreamFacts | undefined;
  /** The bound of one relayed request, not counting time spent waiting on this session's client. */
  requestTimeoutMs(): number;
  /** Runs once when the session ends, whatever ended it. */
  onClose(): void;
}

/** The downstream side speaks through the SDK's Protocol alone: the relay judges nothing an end sends. */
class DownstreamProtocol extends Protocol<Request, Notification, Result> {
  protected assertCapabilityForMethod(): void {}
  protected assertNotificationCapability(): void {}
  protected assertRequestHandlerCapability(): void {}
  protected assertTaskCapability(): void {}
  protected assertTaskHandlerCapability(): void {}
}

type Extra = RequestHandlerExtra<Request, Notification>;

/** Errors that leave the session without an upstream until the caller has a credential. */
function isCredentialMissing(err: unknown): err is McpAuthRequiredError | GatewayError {
  return err instanceof McpAuthRequiredError || (err instanceof GatewayError && err.type === "mcp_identity_required");
}

/** The request as sent on: its method and params, without the id of this side. */
function outgoing(request: JSONRPCRequest): Request {
  return request.params === undefined ? { method: request.method } : { method: request.method, params: request.params };
}

function progressTokenOf(request: Request): string | number | undefined {
  const token = (request.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
  return typeof token === "string" || typeof token === "number" ? token : undefined;
}

/** A downstream request at the upstream: its cancellation, and a deadline that stops while this session's client is being asked something. */
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

/** The fallback server facts of a client never reached yet. */
function unknownFacts(clientName: string): UpstreamFacts {
  return { capabilities: { tools: { listChanged: true } }, serverInfo: { name: clientName, version: "unknown" }, instructions: undefined };
}

/** One relayed session. */
export class RelaySession implements DownstreamSink {
  private readonly protocol = new DownstreamProtocol();
  private link: UpstreamLink | undefined;
  /** Why there is no link yet: the caller has no credential for the per-user client. */
  private missing: McpAuthRequiredError | GatewayError | undefined;
  private opening: Promise<void> | undefined;
  private clientCapabilities: ClientCapabilities | undefined;
  private readonly inFlight = new Map<RequestId, InFlight>();
  private pending = 0;
  private closed = false;
  /** Set when initialize failed: the session is of no further use. */
  failedToInitialize = false;

  constructor(private readonly deps: RelaySessionDeps) {
    // ping is the upstream's to answer, like every other request.
    this.protocol.removeRequestHandler("ping");
    this.protocol.fallbackRequestHandler = (request, extra) => this.onRequest(request, extra);
    this.protocol.fallbackNotificationHandler = (notification) => this.onNotification(notification);
    this.protocol.onclose = () => void this.close();
    this.protocol.onerror = (err) => deps.logger.debug({ err, client: deps.clientName }, "MCP relay session: protocol error");
  }

  /** Starts serving over a downstream transport. */
  connect(transport: Transport): Promise<void> {
    return this.protocol.connect(transport);
  }

  get requestsInFlight(): number {
    return this.inFlight.size;
  }

  /** Gives up the requests a closed response stream carried: the upstream is told they are cancelled. */
  abandon(requestIds: readonly RequestId[]): void {
    for (const id of requestIds) {
      const entry = this.inFlight.get(id);
      entry?.controller.abort(clientGone(entry.method));
    }
  }

  private onRequest(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    switch (request.method) {
      case "initialize":
        return this.initialize(request);
      case "tools/list":
        return this.listTools(request, extra);
      case "tools/call":
        return this.callTool(request, extra);
      case "ping":
        if (this.link === undefined) return Promise.resolve({});
        return this.relay(request, extra);
      default:
        return this.measured(request, extra);
    }
  }

  /** Relays a request and measures it under its method. */
  private async measured(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const started = performance.now();
    let errorType: McpErrorType = "_OTHER";
    try {
      const result = await this.relay(request, extra);
      errorType = "";
      return result;
    } finally {
      this.deps.callerOf(extra.requestId).operationDone(request.method, "", (performance.now() - started) / 1000, errorType);
    }
  }

  private async onNotification(notification: Notification): Promise<void> {
    if (notification.method === "notifications/initialized") return;
    // A shared process is not told one session's roots or other news: the others did not say it.
    if (this.link === undefined || this.link.shared) return;
    await this.link.notify(notification).catch((err: unknown) => this.deps.logger.debug({ err, method: notification.method }, "MCP relay: a notification did not reach the upstream"));
  }

  private async initialize(request: JSONRPCRequest): Promise<InitializeResult> {
    const params = request.params ?? {};
    this.clientCapabilities = params["capabilities"] as ClientCapabilities | undefined;
    try {
      await this.open();
    } catch (err) {
      this.failedToInitialize = true;
      throw err;
    }
    const facts = this.link?.facts ?? this.deps.knownFacts() ?? unknownFacts(this.deps.clientName);
    const requested = params["protocolVersion"];
    return {
      protocolVersion: typeof requested === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      capabilities: facts.capabilities,
      serverInfo: facts.serverInfo,
      ...(facts.instructions !== undefined ? { instructions: facts.instructions } : {}),
    };
  }

  /** Opens the link once (concurrent requests wait for the same attempt); a missing credential leaves none. */
  private open(): Promise<void> {
    if (this.link !== undefined) return Promise.resolve();
    this.opening ??= this.openNow().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  private async openNow(): Promise<void> {
    let link: UpstreamLink;
    try {
      link = await this.deps.connect(this, relayedClientCapabilities(this.clientCapabilities));
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

  private async listTools(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const caller = this.deps.callerOf(extra.requestId);
    if (this.link === undefined && this.missing !== undefined) {
      // Without a credential the tools are listed from the last discovery: the flow starts at the call.
      const tools = this.deps.cachedTools().filter((tool) => caller.toolVisible(tool.name));
      return { tools: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: { type: "object", ...tool.inputSchema } })) };
    }
    const result = await this.relay(request, extra);
    const tools = (result as { tools?: unknown }).tools;
    if (!Array.isArray(tools)) return result;
    return { ...result, tools: tools.filter((tool: { name?: unknown }) => typeof tool?.name === "string" && caller.toolVisible(tool.name)) };
  }

  private async callTool(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const caller = this.deps.callerOf(extra.requestId);
    const name = request.params?.["name"];
    if (typeof name !== "string") throw new McpError(ErrorCode.InvalidParams, "Invalid params: tools/call needs params.name, the name of a tool");
    if (!caller.toolVisible(name)) {
      return { content: [{ type: "text", text: `Error: tool "${name}" is not available: no tool of that name is visible to this caller (tools/list shows the ones that are)` }], isError: true };
    }
    const started = performance.now();
    let errorType: McpErrorType = "_OTHER";
    try {
      await this.open();
      if (this.link === undefined && this.missing !== undefined) {
        errorType = "auth_required";
        return this.credentialResult(this.missing, extra.requestId);
      }
      const result = await this.relay(request, extra);
      if ((result as { isError?: unknown }).isError !== true) errorType = "";
      return result;
    } finally {
      caller.operationDone("tools/call", name, (performance.now() - started) / 1000, errorType);
    }
  }

  /** A tool call of a caller without a credential, answered as /mcp answers it. */
  private credentialResult(missing: McpAuthRequiredError | GatewayError, requestId: RequestId): CallToolResult {
    if (!(missing instanceof McpAuthRequiredError)) return { content: [{ type: "text", text: `Error: ${missing.message}` }], isError: true };
    const payload = missing.payload;
    if (payload.kind === "headers" && this.clientCapabilities?.elicitation?.url !== undefined) {
      // Not awaited: the user finishes the flow in a browser, then calls the tool again.
      this.protocol
        .request({ method: "elicitation/create", params: { mode: "url", message: payload.message, url: payload.submit_url, elicitationId: randomUUID() } }, ANY_RESULT, {
          relatedRequestId: requestId,
          timeout: SERVER_REQUEST_TIMEOUT_MS,
        })
        .catch((err: unknown) => this.deps.logger.debug({ err }, "the MCP client did not answer the credential elicitation"));
    }
    return { content: [{ type: "text", text: missing.toolResult }], isError: true };
  }

  /** Sends a request on upstream and answers with what comes back. */
  private async relay(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    const link = await this.upstream();
    const timeoutMs = this.deps.requestTimeoutMs();
    const entry = new InFlight(request.method, timeoutMs);
    const id = extra.requestId;
    this.inFlight.set(id, entry);
    const cancelled = () => entry.controller.abort(extra.signal.reason);
    extra.signal.addEventListener("abort", cancelled, { once: true });
    const token = progressTokenOf(request);
    try {
      return await link.request(outgoing(request), {
        signal: entry.controller.signal,
        ...(token !== undefined
          ? {
              onprogress: (progress) => {
                entry.progressed();
                void extra.sendNotification({ method: "notifications/progress", params: { ...progress, progressToken: token } });
              },
            }
          : {}),
      });
    } catch (err) {
      throw relayedError(err, request.method, timeoutMs);
    } finally {
      entry.done();
      if (this.inFlight.get(id) === entry) this.inFlight.delete(id);
      extra.signal.removeEventListener("abort", cancelled);
    }
  }

  /** The newest request of this session at the upstream: server-to-client traffic is sent on its stream. */
  private newest(): [RequestId, InFlight] | undefined {
    let last: [RequestId, InFlight] | undefined;
    for (const entry of this.inFlight) last = entry;
    return last;
  }

  async serverRequest(request: Request, upstreamSignal: AbortSignal): Promise<Result> {
    const undeclared = undeclaredCapability(request.method, request.params, this.clientCapabilities);
    if (undeclared !== null) throw undeclared;
    if (this.pending >= MAX_PENDING_SERVER_REQUESTS) throw tooManyPending(request.method, MAX_PENDING_SERVER_REQUESTS);
    const related = this.newest();
    this.pending++;
    related?.[1].hold();
    const token = progressTokenOf(request);
    try {
      return (await this.protocol.request(request, ANY_RESULT, {
        // The request it came during being cancelled or abandoned takes this one with it.
        signal: related === undefined ? upstreamSignal : AbortSignal.any([upstreamSignal, related[1].controller.signal]),
        timeout: SERVER_REQUEST_TIMEOUT_MS,
        ...(related !== undefined ? { relatedRequestId: related[0] } : {}),
        ...(token !== undefined
          ? {
              onprogress: (progress) =>
                void this.link?.notify({ method: "notifications/progress", params: { ...progress, progressToken: token } }).catch(() => undefined),
            }
          : {}),
      })) as Result;
    } catch (err) {
      throw relayedError(err, request.method, SERVER_REQUEST_TIMEOUT_MS);
    } finally {
      this.pending--;
      related?.[1].release();
    }
  }

  serverNotification(notification: Notification): void {
    if (this.closed) return;
    const { method } = notification;
    // News about the server goes on the session's own stream; anything else during a request, on that request's.
    const standalone = method.endsWith("/list_changed") || method === "notifications/resources/updated" || method === "notifications/elicitation/complete";
    const related = standalone ? undefined : this.newest();
    this.protocol
      .notification(notification, related !== undefined ? { relatedRequestId: related[0] } : undefined)
      .catch((err: unknown) => this.deps.logger.debug({ err, method }, "MCP relay: a notification did not reach the client"));
  }

  upstreamLost(err: Error): void {
    this.deps.logger.info({ client: this.deps.clientName, err: err.message }, "MCP relay: the upstream session ended; closing the client's session");
    void this.close();
  }

  /** Ends the session: requests in flight are cancelled upstream, the upstream session (or this session's share) is closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const entry of this.inFlight.values()) entry.controller.abort(new McpError(ErrorCode.ConnectionClosed, "the MCP client session ended"));
    await this.protocol.close().catch(() => undefined);
    const link = this.link;
    this.link = undefined;
    await link?.close().catch((err: unknown) => this.deps.logger.debug({ err }, "closing a relayed upstream session failed"));
    this.deps.onClose();
  }
}
