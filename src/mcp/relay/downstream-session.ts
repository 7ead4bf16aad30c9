/**
 * What every kind of relayed session does on its downstream side, whether it relays to one member
 * (relay-session.ts) or routes among several (virtual-relay-session.ts): the SDK's Protocol wired to the
 * session's handlers, initialize's answer, server-to-client requests, list changes, a tools/call at a member
 * under the caller's measure, and the end.
 */
import type { NotificationOptions, RequestHandlerExtra, RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ClientCapabilities,
  type Implementation,
  type InitializeResult,
  type JSONRPCRequest,
  type Notification,
  type Request,
  type RequestId,
  type Result,
  type ServerCapabilities,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../telemetry/logger.js";
import type { McpErrorType } from "../../telemetry/metrics.js";
import { ANY_RESULT } from "./any-result.js";
import { credentialResult } from "./credential-result.js";
import { DownstreamProtocol, announceListChanges, type DownstreamSession } from "./downstream-protocol.js";
import type { DownstreamSide, RelayMember } from "./relay-member.js";

/** What a relayed request handler is given: the downstream request's id, cancellation and progress. */
export type RelayExtra = RequestHandlerExtra<Request, Notification>;

/** One relayed request being measured. */
export interface RelayOperation {
  /** Records its end: "" for success, else why it failed. */
  end(errorType: McpErrorType): void;
}

/** The base of a relayed session; a subclass answers requests and notifications and owns its members. */
export abstract class RelayedDownstream implements DownstreamSession, DownstreamSide {
  protected readonly protocol = new DownstreamProtocol();
  clientCapabilities: ClientCapabilities | undefined;
  pending = 0;
  protected closed = false;
  failedToInitialize = false;
  /** What initialize answered: the list_changed notifications the session may send. */
  private announced: ServerCapabilities | undefined;

  /** `logFields` name the session in log lines; `what` names its kind in the protocol error's line; `onClose` runs once when the session has ended. */
  constructor(
    protected readonly logger: Logger,
    private readonly logFields: Readonly<Record<string, string>>,
    what: string,
    private readonly onClose: () => void,
  ) {
    // ping is the subclass's to answer, like every other request.
    this.protocol.removeRequestHandler("ping");
    this.protocol.fallbackRequestHandler = (request, extra) => this.onRequest(request, extra);
    this.protocol.fallbackNotificationHandler = (notification) => this.onNotification(notification);
    this.protocol.onclose = () => void this.close();
    this.protocol.onerror = (err) => logger.debug({ err, ...logFields }, `${what}: protocol error`);
  }

  /** Answers a downstream request. */
  protected abstract onRequest(request: JSONRPCRequest, extra: RelayExtra): Promise<Result>;
  /** Passes a downstream notification on. */
  protected abstract onNotification(notification: Notification): Promise<void>;
  /** Stops the members taking requests: those in flight are cancelled upstream. */
  protected abstract stopMembers(): void;
  /** Closes the members' upstream sessions (or this session's shares of them). */
  protected abstract closeMembers(): Promise<void>;

  abstract readonly requestsInFlight: number;
  abstract abandon(requestIds: readonly RequestId[]): void;
  abstract tell(member: RelayMember, notification: Notification, options: NotificationOptions | undefined): Promise<void>;

  connect(transport: Transport): Promise<void> {
    return this.protocol.connect(transport);
  }

  /** Keeps what the client declares at initialize, for the members to declare upstream. */
  protected initializing(request: JSONRPCRequest): void {
    this.clientCapabilities = request.params?.["capabilities"] as ClientCapabilities | undefined;
  }

  /** initialize's answer: the client's protocol version when the SDK speaks it (else the latest), and what the session announces. */
  protected initialized(request: JSONRPCRequest, capabilities: ServerCapabilities, serverInfo: Implementation, instructions: string | undefined): InitializeResult {
    const requested = request.params?.["protocolVersion"];
    this.announced = capabilities;
    return {
      protocolVersion: typeof requested === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      capabilities,
      serverInfo,
      ...(instructions !== undefined ? { instructions } : {}),
    };
  }

  /**
   * A tools/call at `member`, measured by `operation`: the member's link opened first; without the caller's
   * credential, the result that starts its flow; else the upstream's result, a failure when it says isError.
   */
  protected async callAt(member: RelayMember, request: Request, extra: RelayExtra, operation: RelayOperation, serverRequestTimeoutMs: number): Promise<Result> {
    let errorType: McpErrorType = "_OTHER";
    try {
      if (!member.linked) await member.open();
      const missing = member.credentialMissing;
      if (missing !== undefined) {
        errorType = "auth_required";
        return credentialResult(missing, extra.requestId, { protocol: this.protocol, capabilities: this.clientCapabilities, logger: this.logger, timeoutMs: serverRequestTimeoutMs });
      }
      const result = await member.relay(request, extra);
      if ((result as { isError?: unknown }).isError !== true) errorType = "";
      return result;
    } finally {
      operation.end(errorType);
    }
  }

  async ask(request: Request, options: RequestOptions): Promise<Result> {
    return (await this.protocol.request(request, ANY_RESULT, options)) as Result;
  }

  listsChanged(all: boolean): void {
    if (this.closed || this.announced === undefined) return;
    announceListChanges(this.protocol, this.announced, all, this.logger);
  }

  /** A member's upstream session ended: the client's session ends with it. */
  lost(member: RelayMember, err: Error): void {
    this.logger.info({ ...this.logFields, client: member.clientName, err: err.message }, "MCP relay: an upstream session ended; closing the client's session");
    void this.close();
  }

  /** Ends the session: requests in flight are cancelled upstream, the members' upstream sessions (or shares) are closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopMembers();
    await this.protocol.close().catch(() => undefined);
    await this.closeMembers();
    this.onClose();
  }
}
