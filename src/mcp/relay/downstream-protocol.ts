/**
 * The downstream side of a relayed session: the SDK's Protocol with no capability checks of its own (the
 * relay judges nothing an end sends), and what every kind of relayed session offers the endpoint.
 */
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Notification, Request, RequestId, Result } from "@modelcontextprotocol/sdk/types.js";

/** The SDK's Protocol, answering whatever the relay's handlers answer. */
export class DownstreamProtocol extends Protocol<Request, Notification, Result> {
  protected assertCapabilityForMethod(): void {}
  protected assertNotificationCapability(): void {}
  protected assertRequestHandlerCapability(): void {}
  protected assertTaskCapability(): void {}
  protected assertTaskHandlerCapability(): void {}
}

/** A relayed session as the endpoint drives it: /mcp/<client> and one-member virtual servers, or several members. */
export interface DownstreamSession {
  /** Starts serving over a downstream transport. */
  connect(transport: Transport): Promise<void>;
  /** Requests at an upstream now (an idle session has none). */
  readonly requestsInFlight: number;
  /** Set when initialize failed: the session is of no further use. */
  readonly failedToInitialize: boolean;
  /** Gives up the requests a closed response stream carried: the upstream is told they are cancelled. */
  abandon(requestIds: readonly RequestId[]): void;
  /** Ends the session and its upstream sessions. */
  close(): Promise<void>;
}
