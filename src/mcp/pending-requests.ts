/**
 * The requests a client transport sent and has not seen answered, by id, with their methods: what an answer
 * that passed the bound on one message is owed. The SDK's protocol tracks the same privately; a transport
 * that drops such an answer needs its own record to tell whose it was.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { answeredIdOf, oversizedAnswer } from "./message-bound.js";

/** Requests awaiting an answer that are remembered at most; the oldest are forgotten first. */
const MAX_PENDING = 4096;

/** The method of every request sent and not yet answered or cancelled, by id. */
export class PendingRequests {
  private readonly methods = new Map<string | number, string>();

  /** Remembers a request sent, and forgets one that a `notifications/cancelled` sent gives up. */
  sent(message: JSONRPCMessage): void {
    if ("method" in message && "id" in message) {
      this.methods.set(message.id, message.method);
      if (this.methods.size > MAX_PENDING) this.methods.delete(this.methods.keys().next().value as string | number);
    } else if ("method" in message && message.method === "notifications/cancelled") {
      const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof id === "string" || typeof id === "number") this.methods.delete(id);
    }
  }

  /** Forgets the request a received answer settles. */
  received(message: JSONRPCMessage): void {
    if (!("method" in message) && "id" in message && message.id !== undefined) this.methods.delete(message.id);
  }

  /**
   * The JSON-RPC error owed in place of a message over the bound, from its first and last bytes, when they
   * show it answered a pending request (then forgotten); undefined for anything else.
   */
  owedFor(head: string, tail: string, maxBytes: number): JSONRPCMessage | undefined {
    const id = answeredIdOf(head, tail);
    const method = id === undefined ? undefined : this.methods.get(id);
    if (id === undefined || method === undefined) return undefined;
    this.methods.delete(id);
    return oversizedAnswer({ jsonrpc: "2.0", id, method }, maxBytes);
  }

  /** Forgets every request (the connection is gone). */
  clear(): void {
    this.methods.clear();
  }
}
