/**
 * The bound on one message an upstream MCP server sends: a JSON answer's bytes, one event's of an event
 * stream, one stdio line's (stdio-transport.ts). Without it a server that answers without end fills the
 * gateway's memory. It is the SDK's own bound on a stdio line, so every transport refuses the same size. A
 * request whose answer passes it gets a JSON-RPC error saying so, in the place its answer would have come, and
 * the server is not disconnected for it; a stream no one request owns (a streamable HTTP session's GET) fails,
 * while legacy SSE, whose one stream carries every answer, skips the event (event-gate.ts).
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
export function endsEvent(a: number, b: number): boolean {
  return (a === LF && (b === LF || b === CR)) || (a === CR && b === CR);
}

/** A chunk as a Buffer over the same memory, for its native searches. */
function bytesOf(chunk: Uint8Array): Buffer {
  return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

// Any blank line holds one of these pairs: LF CR covers CR LF CR LF, LF LF covers CR LF LF.
const EVENT_ENDS = ["\n\n", "\r\r", "\n\r"] as const;

/** Where the first event ending in `bytes` at or after `from` ends (the index after it); -1 for none. */
export function nextEventEnd(bytes: Buffer, from: number): number {
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

/** A JSON-RPC id as written: a number or a string. */
const WRITTEN_ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
/**
 * The keys a message writes before its one large value, in either order SDKs write them
 * (`{"jsonrpc":"2.0","id":7,"result":` or `{"result":`): which value it is, and the id when it came first.
 */
const LEADING_KEYS = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?(?:"id"\s*:\s*${WRITTEN_ID}\s*,\s*)?(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(result|error|method|params)"\s*:`);
/** A message's id written as its last member (`...,"jsonrpc":"2.0","id":7}`); a nested id would close two objects. */
const TRAILING_ID = new RegExp(String.raw`"id"\s*:\s*${WRITTEN_ID}\s*\}\s*$`);

/**
 * The id of the request a message over the bound answered, read from its first and last bytes (the rest was
 * never kept); undefined when those do not show an answer (a request or notification from the server, or
 * members in an order no SDK writes).
 */
export function answeredIdOf(head: string, tail: string): string | number | undefined {
  const leading = LEADING_KEYS.exec(head);
  if (leading === null || (leading[2] !== "result" && leading[2] !== "error")) return undefined;
  const written = leading[1] ?? TRAILING_ID.exec(tail)?.[1];
  return written === undefined ? undefined : (JSON.parse(written) as string | number);
}

/** The error owed to `sent`, a request whose answer passed the bound; undefined for a notification or an answer. */
export function oversizedAnswer(sent: JSONRPCMessage, maxBytes = MAX_UPSTREAM_MESSAGE_BYTES): JSONRPCMessage | undefined {
  if (!("method" in sent) || !("id" in sent)) return undefined;
  return {
    jsonrpc: "2.0",
    id: sent.id,
    error: { code: ErrorCode.InternalError, message: `the upstream MCP server's answer to ${sent.method} is larger than ${maxBytes} bytes, the most one message may take; it was dropped` },
  };
}

/**
 * Wraps `base` so that no answer body passes the bound: past it the body fails with OversizedMessageError
 * and the rest is not read. It serves the legacy SSE transport's POSTs, whose answers carry no message;
 * its GET stream is bounded event by event (event-gate.ts).
 */
export function boundedAnswerFetch(base: FetchLike, maxBytes = MAX_UPSTREAM_MESSAGE_BYTES): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (response.body === null) return response;
    let bytes = 0;
    const bounded = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytes += chunk.length;
          if (bytes > maxBytes) throw new OversizedMessageError(maxBytes);
          controller.enqueue(chunk);
        },
      }),
    );
    return withBody(response, bounded);
  };
}

/** `response` with `body` in place of its own (its status, headers and URL kept). */
export function withBody(response: Response, body: ReadableStream<Uint8Array>): Response {
  const wrapped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(wrapped, "url", { value: response.url });
  return wrapped;
}
