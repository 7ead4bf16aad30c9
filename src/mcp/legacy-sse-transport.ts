/**
 * The legacy HTTP+SSE client transport: the SDK's, on the fetch the gateway gives it (one shared agent, so
 * sessions reuse pooled TCP connections), with each message bounded. Its GET stream carries every answer, so
 * an event over the bound is skipped rather than ending the stream (event-gate.ts): the request it answered
 * gets a JSON-RPC error naming the bound in its place, as over streamable HTTP and stdio, and anything else
 * over the bound is reported and dropped. Streamable HTTP has a transport of the gateway's own
 * (relay/upstream-http-transport.ts).
 */
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { EventGate } from "./event-gate.js";
import { boundedAnswerFetch, MAX_UPSTREAM_MESSAGE_BYTES, OversizedMessageError, withBody } from "./message-bound.js";
import { PendingRequests } from "./pending-requests.js";
import { UpstreamHttpStatusError } from "./upstream-errors.js";

/** Wraps a fetch so a 401/403 becomes an error carrying the status (the SSE POST path only reports prose). */
function statusRecordingFetch(base: FetchLike): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (response.status === 401 || response.status === 403) {
      const body = await response.text().catch(() => "");
      throw new UpstreamHttpStatusError(response.status, `Error POSTing to endpoint (HTTP ${response.status}): ${body}`);
    }
    return response;
  };
}

/** A legacy HTTP+SSE transport sending `headers` on the GET stream and on every POST, each message bounded. */
export class LegacySseTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport["onmessage"];
  private readonly inner: SSEClientTransport;
  /** The requests sent and not yet answered: what an answer over the bound is owed. */
  private readonly pending = new PendingRequests();

  constructor(
    url: URL,
    headers: Record<string, string>,
    fetch: FetchLike,
    private readonly maxMessageBytes = MAX_UPSTREAM_MESSAGE_BYTES,
  ) {
    this.inner = new SSEClientTransport(url, {
      requestInit: { headers },
      fetch: statusRecordingFetch(boundedAnswerFetch(fetch, maxMessageBytes)),
      // The GET stream is opened by the eventsource package; the SDK adds requestInit's headers to it,
      // and merging them here again keeps them there should that ever change.
      eventSourceInit: {
        fetch: async (input, init) => {
          const merged = new Headers(init?.headers);
          for (const [name, value] of Object.entries(headers)) if (!merged.has(name)) merged.set(name, value);
          return this.gated(await fetch(input, { ...init, headers: merged }));
        },
      },
    });
    this.inner.onmessage = (message) => {
      this.pending.received(message);
      this.onmessage?.(message);
    };
    this.inner.onerror = (error) => this.onerror?.(error);
    this.inner.onclose = () => {
      this.pending.clear();
      this.onclose?.();
    };
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage): Promise<void> {
    this.pending.sent(message);
    return this.inner.send(message);
  }

  close(): Promise<void> {
    this.pending.clear();
    return this.inner.close();
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion(version);
  }

  /** The GET stream's response with its events let through whole, each within the bound. */
  private gated(response: Response): Response {
    if (response.body === null || !(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return response;
    const maxBytes = this.maxMessageBytes;
    const oversized = (head: string, tail: string): void => this.oversized(head, tail);
    let gate: EventGate | undefined;
    const gated = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        start(controller) {
          gate = new EventGate(maxBytes, {
            events: (pieces) => {
              for (const piece of pieces) controller.enqueue(piece);
            },
            oversized,
          });
        },
        transform(chunk) {
          gate?.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        },
      }),
    );
    return withBody(response, gated);
  }

  /** An event over the bound: the request it answered gets an error in its place; anything else is reported and dropped. */
  private oversized(head: string, tail: string): void {
    const answer = this.pending.owedFor(head, tail, this.maxMessageBytes);
    if (answer !== undefined) this.onmessage?.(answer);
    else this.onerror?.(new OversizedMessageError(this.maxMessageBytes));
  }
}
