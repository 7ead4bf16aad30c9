/**
 * The bound on one message an upstream MCP server sends over HTTP: a JSON answer's bytes, or one event's of
 * an event stream. Without it a server that answers without end fills the gateway's memory. The bound is
 * the SDK's own on a stdio line, so every transport refuses the same size. A request whose answer to its
 * own POST passes it gets a JSON-RPC error saying so, in the place its answer would have come, and the
 * server is not disconnected for it; a shared stream (the session's GET, legacy SSE) that passes it fails.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { ErrorCode, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** The most bytes one message from an upstream server may take. */
export const MAX_UPSTREAM_MESSAGE_BYTES = STDIO_DEFAULT_MAX_BUFFER_SIZE;

/** A message from the upstream passed the bound; what was read of it is dropped. */
export class OversizedMessageError extends Error {
  readonly code = "MCP_MESSAGE_TOO_LARGE";

  constructor(maxBytes: number) {
    super(`the upstream MCP server sent a message larger than ${maxBytes} bytes, the most one message may take; it was dropped`);
    this.name = "OversizedMessageError";
  }
}

const LF = 10;
const CR = 13;

/** Whether bytes `a` then `b` end an event: a line end followed by an empty line (LF LF, CR CR, or LF CR). */
function endsEvent(a: number, b: number): boolean {
  return (a === LF && (b === LF || b === CR)) || (a === CR && b === CR);
}

/** A chunk as a Buffer over the same memory, for its native searches. */
function bytesOf(chunk: Uint8Array): Buffer {
  return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

// Any blank line holds one of these pairs: LF CR covers CR LF CR LF, LF LF covers CR LF LF.
const EVENT_ENDS = ["\n\n", "\r\r", "\n\r"] as const;

/** Where the first event ending in `bytes` at or after `from` ends (the index after it); -1 for none. */
function nextEventEnd(bytes: Buffer, from: number): number {
  let first = -1;
  for (const pair of EVENT_ENDS) {
    const at = bytes.indexOf(pair, from);
    if (at !== -1 && (first === -1 || at < first)) first = at;
  }
  return first === -1 ? -1 : first + 2;
}

/** Where the last event ending in `bytes` ends; -1 for none. */
function lastEventEnd(bytes: Buffer): number {
  const at = Math.max(...EVENT_ENDS.map((pair) => bytes.lastIndexOf(pair)));
  return at === -1 ? -1 : at + 2;
}

/** Counts the bytes of an event stream's events as they arrive. */
export class EventBytes {
  /** The bytes of the event in progress so far. */
  private count = 0;
  private previous = 0;

  constructor(readonly maxBytes = MAX_UPSTREAM_MESSAGE_BYTES) {}

  /** Adds a chunk of the stream; answers where in it the last event it finishes ends (-1: none), or throws once an event passes the bound. */
  add(chunk: Uint8Array): number {
    const bytes = bytesOf(chunk);
    const previous = this.previous;
    if (chunk.length > 0) this.previous = chunk[chunk.length - 1]!;
    const first = chunk.length > 0 && endsEvent(previous, chunk[0]!) ? 1 : nextEventEnd(bytes, 0);
    if (first === -1) {
      this.count += chunk.length;
      this.check(this.count);
      return -1;
    }
    this.check(this.count + first);
    let last = first;
    if (chunk.length - first > this.maxBytes) {
      // Only a chunk longer than the bound can hold a whole event that passes it.
      for (let next = nextEventEnd(bytes, last); next !== -1; next = nextEventEnd(bytes, last)) {
        this.check(next - last);
        last = next;
      }
    } else last = Math.max(first, lastEventEnd(bytes));
    this.count = chunk.length - last;
    this.check(this.count);
    return last;
  }

  private check(bytes: number): void {
    if (bytes > this.maxBytes) throw new OversizedMessageError(this.maxBytes);
  }
}

/** The answers owed to the requests of `sent` (one message or a batch) whose answer passed the bound. */
export function oversizedAnswers(sent: JSONRPCMessage | JSONRPCMessage[], maxBytes = MAX_UPSTREAM_MESSAGE_BYTES): JSONRPCMessage[] {
  const answers: JSONRPCMessage[] = [];
  for (const message of Array.isArray(sent) ? sent : [sent]) {
    if (!("method" in message) || !("id" in message)) continue;
    answers.push({
      jsonrpc: "2.0",
      id: message.id,
      error: { code: ErrorCode.InternalError, message: `the upstream MCP server's answer to ${message.method} is larger than ${maxBytes} bytes, the most one message may take; it was dropped` },
    });
  }
  return answers;
}

/** The JSON-RPC message a POST sent, when its body is one the transports write (a JSON string). */
function sentMessages(init: RequestInit | undefined): JSONRPCMessage | JSONRPCMessage[] | undefined {
  if (init?.method !== "POST" || typeof init.body !== "string") return undefined;
  try {
    return JSON.parse(init.body) as JSONRPCMessage | JSONRPCMessage[];
  } catch {
    return undefined;
  }
}

/** An event stream's text carrying `messages`, one event each. */
function asEvents(messages: JSONRPCMessage[]): Uint8Array {
  return Buffer.from(messages.map((message) => `event: message\ndata: ${JSON.stringify(message)}\n\n`).join(""));
}

/**
 * Wraps `base` so no answer body passes the bound. An event stream's events pass as they complete; a JSON
 * answer is held to its end (the SDK reads it whole anyway). Past the bound the rest of the answer is not
 * read: a POST's answer becomes the errors owed to the requests it sent, any other body fails.
 */
export function boundedAnswerFetch(base: FetchLike, maxBytes = MAX_UPSTREAM_MESSAGE_BYTES): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    const body = response.body;
    if (body === null) return response;
    const events = (response.headers.get("content-type") ?? "").startsWith("text/event-stream");
    const counter = new EventBytes(maxBytes);
    let held: Uint8Array[] = [];
    let heldBytes = 0;
    const reader = body.getReader();
    const bounded = new ReadableStream<Uint8Array>({
      // A pull that enqueues nothing is not called again, so it reads until it has something to give.
      async pull(controller) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            for (const piece of held) controller.enqueue(piece);
            held = [];
            controller.close();
            return;
          }
          try {
            if (events) {
              const end = counter.add(value);
              if (end === -1) held.push(value);
              else {
                for (const piece of held) controller.enqueue(piece);
                controller.enqueue(value.subarray(0, end));
                held = end === value.length ? [] : [value.subarray(end)];
                return;
              }
            } else {
              heldBytes += value.length;
              if (heldBytes > maxBytes) throw new OversizedMessageError(maxBytes);
              held.push(value);
            }
          } catch (err) {
            held = [];
            await reader.cancel(err).catch(() => undefined);
            const sent = response.ok ? sentMessages(init) : undefined;
            const owed = sent === undefined ? [] : oversizedAnswers(sent, maxBytes);
            if (owed.length === 0) controller.error(err);
            else {
              controller.enqueue(events ? asEvents(owed) : Buffer.from(JSON.stringify(owed.length === 1 ? owed[0] : owed)));
              controller.close();
            }
            return;
          }
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    });
    const wrapped = new Response(bounded, { status: response.status, statusText: response.statusText, headers: response.headers });
    Object.defineProperty(wrapped, "url", { value: response.url });
    return wrapped;
  };
}
