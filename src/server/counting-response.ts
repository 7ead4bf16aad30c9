/**
 * Response classes that count the body bytes written through them, for http_response_size_bytes.
 * Neither Node server exposes a per-response body count; the one-port server builds its responses
 * from these classes, so counting costs no per-request closures or wrappers.
 */
import * as http from "node:http";
import * as http2 from "node:http2";

const bodyBytes = Symbol("gw.bodyBytes");
const ending = Symbol("gw.ending");

/** What the counting classes add to a response. */
interface Counting {
  [bodyBytes]: number;
  [ending]: boolean;
}

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === "string") return Buffer.byteLength(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

/** An HTTP/1.1 response that counts its body bytes. */
export class CountingServerResponse extends http.ServerResponse {
  [bodyBytes] = 0;
  [ending] = false;
}

/** An HTTP/2 compatibility response that counts its body bytes. */
export class CountingHttp2ServerResponse extends http2.Http2ServerResponse {
  [bodyBytes] = 0;
  [ending] = false;
}

// write() and end() have overloads a subclass cannot restate generically; these pass every argument
// through unchanged. HTTP/2's end(chunk) calls this.write(chunk): that chunk is counted once.
for (const cls of [CountingServerResponse, CountingHttp2ServerResponse]) {
  const proto = cls.prototype as unknown as Counting & { write: (...args: unknown[]) => unknown; end: (...args: unknown[]) => unknown };
  const parent = Object.getPrototypeOf(proto) as typeof proto;
  const write = parent.write;
  const end = parent.end;
  proto.write = function (this: Counting, ...args: unknown[]) {
    if (!this[ending]) this[bodyBytes] += byteLength(args[0], args[1]);
    return Reflect.apply(write, this, args);
  };
  proto.end = function (this: Counting, ...args: unknown[]) {
    if (typeof args[0] !== "function") this[bodyBytes] += byteLength(args[0], args[1]);
    this[ending] = true;
    try {
      return Reflect.apply(end, this, args);
    } finally {
      this[ending] = false;
    }
  };
}

/** The body bytes written so far; 0 for a response not built by the counting classes. */
export function bodyBytesOf(res: http.ServerResponse | http2.Http2ServerResponse): number {
  return (res as Partial<Counting>)[bodyBytes] ?? 0;
}
