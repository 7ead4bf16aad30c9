/**
 * Relayed requests sent straight on an upstream session's transport, beside the SDK client that owns it.
 * The SDK's request() arms a timer, listens on the signal for good and checks each response with zod
 * twice more, none of which a relayed request needs: the relay keeps its own deadline (relay-member.ts)
 * and passes results on unchecked. The requests carry ids of their own (strings, where the SDK's are
 * numbers), so their responses are told from the client's; everything else goes on to the client.
 * Cancellation and the end of the connection fail a request as the SDK's request() would.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, type JSONRPCMessage, type Request, type Result } from "@modelcontextprotocol/sdk/types.js";

/** How a pending request ends: with the response's result or error, or with a failure of its own. */
type Settle = (outcome: { result: Result } | { error: Error }) => void;

/** The relayed requests of one upstream session. */
export class UpstreamRequests {
  private next = 0;
  private readonly pending = new Map<string, Settle>();

  private constructor(private readonly transport: Transport) {}

  /** Puts the requests on the transport of `client`, which must be connected: responses to them are taken off before the client sees them. */
  static install(client: Pick<Client, "transport">): UpstreamRequests {
    const transport = client.transport;
    if (transport === undefined) throw new Error("the upstream client is not connected");
    const requests = new UpstreamRequests(transport);
    const onmessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (!requests.settled(message)) onmessage?.(message, extra);
    };
    const onclose = transport.onclose;
    transport.onclose = () => {
      onclose?.();
      requests.failAll(new McpError(ErrorCode.ConnectionClosed, "Connection closed"));
    };
    return requests;
  }

  /** Settles the request `message` answers; false when it answers none of these requests. */
  private settled(message: JSONRPCMessage): boolean {
    const id = (message as { id?: unknown }).id;
    if (typeof id !== "string" || "method" in message) return false;
    const settle = this.pending.get(id);
    if (settle === undefined) return false;
    this.pending.delete(id);
    if ("result" in message) settle({ result: message.result });
    else if ("error" in message) settle({ error: McpError.fromError(message.error.code, message.error.message, message.error.data) });
    return true;
  }

  private failAll(error: Error): void {
    const settles = [...this.pending.values()];
    this.pending.clear();
    for (const settle of settles) settle({ error });
  }

  /** Sends `request` and answers with its result; aborting `signal` cancels it upstream (notifications/cancelled). */
  send(request: Request, signal: AbortSignal): Promise<Result> {
    // As the SDK's request(): a signal aborted already fails the request with its reason, unsent.
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = `gw-${++this.next}`;
    return new Promise<Result>((resolve, reject) => {
      const cancelled = () => {
        if (!this.pending.delete(id)) return;
        const reason: unknown = signal.reason;
        this.transport
          .send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: String(reason) } })
          .catch(() => undefined);
        reject(reason instanceof McpError ? reason : new McpError(ErrorCode.RequestTimeout, String(reason)));
      };
      this.pending.set(id, (outcome) => {
        signal.removeEventListener("abort", cancelled);
        if ("result" in outcome) resolve(outcome.result);
        else reject(outcome.error);
      });
      signal.addEventListener("abort", cancelled, { once: true });
      this.transport.send({ jsonrpc: "2.0", id, method: request.method, ...(request.params !== undefined ? { params: request.params } : {}) }).catch((err: unknown) => {
        if (!this.pending.delete(id)) return;
        signal.removeEventListener("abort", cancelled);
        reject(err);
      });
    });
  }
}
