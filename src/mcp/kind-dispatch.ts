/**
 * The SDK's Protocol, its incoming messages told apart by jsonRpcKind (json-rpc-kind.ts) rather than by
 * the SDK's zod guards, which parse a message once per kind they try. The Protocol's connect() installs a
 * transport handler that runs those guards and then calls the Protocol's handler of the kind; this
 * installs one that calls the same handlers after the hand-written check, which agrees with the guards.
 */
import type { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCErrorResponse, JSONRPCNotification, JSONRPCRequest, JSONRPCResultResponse, MessageExtraInfo, Notification, Request, Result } from "@modelcontextprotocol/sdk/types.js";
import { jsonRpcKind } from "./json-rpc-kind.js";

/** The Protocol's handler of each kind of message (declared private by the SDK, which calls them from connect()). */
interface KindHandlers {
  _onresponse(response: JSONRPCResultResponse | JSONRPCErrorResponse): void;
  _onrequest(request: JSONRPCRequest, extra?: MessageExtraInfo): void;
  _onnotification(notification: JSONRPCNotification): void;
  _onerror(error: Error): void;
}

/**
 * Runs `connect`, the Protocol's own connect() of `protocol` to `transport`, then dispatches the
 * transport's messages by jsonRpcKind (a handler the transport had before, the Protocol's connect() keeps too).
 */
export async function connectByKind(protocol: Protocol<Request, Notification, Result>, transport: Transport, connect: () => Promise<void>): Promise<void> {
  const before = transport.onmessage;
  await connect();
  const handlers = protocol as unknown as KindHandlers;
  // An SDK whose Protocol no longer has these handlers keeps its own dispatch.
  if (typeof handlers._onresponse !== "function" || typeof handlers._onrequest !== "function" || typeof handlers._onnotification !== "function" || typeof handlers._onerror !== "function") return;
  transport.onmessage = (message, extra) => {
    before?.(message, extra);
    switch (jsonRpcKind(message)) {
      case "result":
      case "error":
        handlers._onresponse(message as JSONRPCResultResponse | JSONRPCErrorResponse);
        break;
      case "request":
        handlers._onrequest(message as JSONRPCRequest, extra);
        break;
      case "notification":
        handlers._onnotification(message as JSONRPCNotification);
        break;
      default:
        handlers._onerror(new Error(`Unknown message type: ${JSON.stringify(message)}`));
    }
  };
}
