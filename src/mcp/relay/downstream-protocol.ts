/**
 * The downstream side of a relayed session: the SDK's Protocol with no capability checks of its own (the
 * relay judges nothing an end sends), and what every kind of relayed session offers the endpoint.
 */
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Notification, Request, RequestId, Result } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../telemetry/logger.js";

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
  /**
   * Tells the client that what it may list may have changed (its key, the settings, a quarantine, a virtual
   * server's edit): tools/list_changed, and with `all` the prompts and resources list_changed too.
   */
  listsChanged(all: boolean): void;
  /** Ends the session and its upstream sessions. */
  close(): Promise<void>;
}

/**
 * Sends the list_changed notifications a session announced (`capabilities`, what its initialize answered):
 * tools, and with `all` prompts and resources too. A client that is gone is not an error.
 */
export function announceListChanges(protocol: DownstreamProtocol, capabilities: { tools?: object; prompts?: object; resources?: object }, all: boolean, logger: Logger): void {
  const parts = all ? (["tools", "prompts", "resources"] as const) : (["tools"] as const);
  for (const part of parts) {
    if (capabilities[part] === undefined) continue;
    protocol.notification({ method: `notifications/${part}/list_changed` }).catch((err: unknown) => logger.debug({ err }, "MCP relay: a list change did not reach the client"));
  }
}
