/**
 * Reads a REST request body into a JSON object: bounded by the size limit (a 413 stops reading, it
 * never buffers the rest; see refused-body.ts for what becomes of it), JSON content types only, strict
 * UTF-8, and an object at the top.
 */
import { isUtf8 } from "node:buffer";
import { IncomingMessage } from "node:http";
import { GatewayError } from "../../errors.js";
import { isJsonObject } from "../../proto-json/message-from-json.js";
import { invalidRequest, payloadTooLarge, unsupportedMediaType } from "./rest-error.js";
import type { ClientBody } from "../../providers/types.js";
import type { Req } from "../node-http.js";

/** Thrown when the client goes away mid-body; there is nobody left to answer. */
export class ClientClosedError extends GatewayError {
  constructor() {
    super("unavailable", "the client closed the request before sending its whole body", {
      type: "client_closed_request",
    });
  }
}

/** The body as a JSON object; an empty body is `{}`. */
export async function readJsonBody(req: Req, maxBytes: number): Promise<Record<string, unknown>> {
  return (await readJsonBodyWithText(req, maxBytes)).json;
}

/**
 * The body as a JSON object, and the text it was parsed from with its bytes ("" for an empty body), for
 * forwarding it unchanged. Parsed as the read settles, so the inference path's read is one promise, not an async
 * function awaiting another.
 */
export function readJsonBodyWithText(req: Req, maxBytes: number): Promise<{ json: Record<string, unknown>; raw: ClientBody }> {
  return readBytes(req, maxBytes, true, (bytes) => parseJsonBody(req, bytes));
}

const EMPTY: ClientBody = { text: "", bytes: new Uint8Array(0) };

function parseJsonBody(req: Req, bytes: Buffer): { json: Record<string, unknown>; raw: ClientBody } {
  if (bytes.length === 0) return { json: {}, raw: EMPTY };
  checkContentType(req);

  // isUtf8 is a native check; TextDecoder's fatal mode costs a decoder per request.
  if (!isUtf8(bytes)) throw invalidRequest("request body is not valid UTF-8");
  const decoded = bytes.toString("utf8");
  // A leading byte-order mark (three bytes) is dropped, as TextDecoder does.
  const bom = decoded.charCodeAt(0) === 0xfeff;
  const text = bom ? decoded.slice(1) : decoded;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // Whitespace alone counts as an empty body; checked only here so a valid body is never copied by trim().
    if (text.trim() === "") return { json: {}, raw: EMPTY };
    throw invalidRequest(`request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isJsonObject(json)) throw invalidRequest(`request body must be a JSON object, got ${describe(json)}`);
  return { json, raw: { text, bytes: bom ? bytes.subarray(3) : bytes } };
}

function describe(json: unknown): string {
  if (json === null) return "null";
  return Array.isArray(json) ? "an array" : `a ${typeof json}`;
}

function checkContentType(req: Req): void {
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
    throw unsupportedMediaType(`content-encoding "${encoding}" is not supported`);
  }
  const contentType = req.headers["content-type"];
  // What nearly every client sends, accepted without splitting it into parameters.
  if (contentType === undefined || contentType === "application/json") return;
  const [media = "", ...params] = contentType.split(";").map((p) => p.trim().toLowerCase());
  if (media !== "application/json" && !media.endsWith("+json")) {
    throw unsupportedMediaType(`content-type "${contentType}" is not supported`);
  }
  const charset = params.find((p) => p.startsWith("charset="))?.slice("charset=".length).replace(/"/g, "");
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw unsupportedMediaType(`charset "${charset}" is not supported; JSON bodies must be UTF-8`);
  }
}

/** The raw body bytes, within the limit (a 413 GatewayError past it, ClientClosedError when the client goes away). */
export function readBodyBytes(req: Req, maxBytes: number): Promise<Buffer> {
  return readBytes(req, maxBytes, true, asIs);
}

function asIs(bytes: Buffer): Buffer {
  return bytes;
}

function ignore(): void {}

/**
 * Reads and drops the body of a route that takes none, still within the limit: clients often send
 * `{}` anyway, and an unread body would hold an HTTP/2 stream open.
 */
export async function discardBody(req: Req, maxBytes: number): Promise<void> {
  await readBytes(req, maxBytes, false, asIs);
}

/**
 * The body read within the limit and turned into what `finish` makes of it (a throw of `finish` rejects).
 * A handler called as the request's headers are parsed sees none of its body yet, but a small body nearly
 * always came in the same read from the socket, which Node parses before running microtasks: one microtask
 * later such a body waits whole in the request's buffer and is taken from there, with no listener added or
 * removed. A body still on its way is read as it arrives (BodyReader).
 */
function readBytes<T>(req: Req, maxBytes: number, keep: boolean, finish: (bytes: Buffer) => T): Promise<T> {
  const length = req.headers["content-length"];
  // NaN for a body without a declared length (chunked), which no buffered length equals.
  const declared = length === undefined ? Number.NaN : Number(length);
  if (declared > maxBytes) return Promise.reject(payloadTooLarge(maxBytes));
  // Also when the body is already whole: a throw of takeWhole then rejects, as BodyReader's errors do.
  return Promise.resolve().then(() => (isWhole(req, declared) ? takeWhole(req, maxBytes, keep, finish) : listen(req, maxBytes, keep, finish)));
}

/**
 * True when an HTTP/1.1 request's whole body is in its buffer, none of it read: the message is complete, or
 * as many bytes as its content-length says are buffered (Node marks the message complete only a little
 * later). Not for HTTP/2, whose `complete` also turns true when a stream is cut short.
 */
function isWhole(req: Req, declared: number): req is IncomingMessage {
  if (!(req instanceof IncomingMessage) || req.readableEnded || req.readableFlowing === true) return false;
  return req.complete || req.readableLength === declared;
}

/** The whole buffered body of `req` (see isWhole), within the limit. */
function takeWhole<T>(req: IncomingMessage, maxBytes: number, keep: boolean, finish: (bytes: Buffer) => T): T {
  // A declared length was checked in readBytes; a chunked body declares none.
  if (req.readableLength > maxBytes) throw payloadTooLarge(maxBytes);
  const ended = req.complete;
  // read() hands over all that is buffered, as one Buffer (null when the body is empty).
  const data = req.read() as Buffer | string | null;
  // A stream whose end is still to come ends on its own once flowing; nothing is left to flow but its end.
  if (!ended) req.resume();
  const bytes = data === null ? Buffer.alloc(0) : typeof data === "string" ? Buffer.from(data) : data;
  return finish(keep ? bytes : Buffer.alloc(0));
}

/** The body read as it arrives, within the limit. */
function listen<T>(req: Req, maxBytes: number, keep: boolean, finish: (bytes: Buffer) => T): Promise<T> {
  return new Promise((resolve, reject) => {
    // A throw of `finish` here rejects the promise: the executor's own throws do.
    if (req.readableEnded) {
      resolve(finish(Buffer.alloc(0)));
      return;
    }
    new BodyReader(req, maxBytes, keep, (bytes) => {
      try {
        resolve(finish(bytes));
      } catch (err) {
        reject(err);
      }
    }, reject);
  });
}

/**
 * One body read: collects the chunks within the limit and settles once. Listeners are added with on()
 * and removed together when the read settles: once() would wrap each of them per request.
 */
class BodyReader {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private readonly onData: (chunk: Buffer | string) => void;
  private readonly onEnd: () => void;
  private readonly onGone: () => void;

  constructor(
    private readonly req: Req,
    private readonly maxBytes: number,
    private readonly keep: boolean,
    private readonly resolve: (body: Buffer) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.onData = this.data.bind(this);
    this.onEnd = this.end.bind(this);
    this.onGone = this.gone.bind(this);
    // Errors after a 413 or a settled read (e.g. the client resetting) have nobody to report to.
    req.on("error", ignore);
    req.on("data", this.onData);
    req.on("end", this.onEnd);
    req.on("error", this.onGone);
    req.on("close", this.onGone);
  }

  private detach(): void {
    this.req.off("data", this.onData);
    this.req.off("end", this.onEnd);
    this.req.off("error", this.onGone);
    this.req.off("close", this.onGone);
  }

  private data(chunk: Buffer | string): void {
    const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    this.size += buf.length;
    if (this.size > this.maxBytes) {
      this.detach();
      // Pausing leaves the rest unread: the caller answers first, then drops it (dropRefusedBody).
      this.req.pause();
      this.reject(payloadTooLarge(this.maxBytes));
      return;
    }
    if (this.keep) this.chunks.push(buf);
  }

  private end(): void {
    this.detach();
    this.resolve(this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks));
  }

  private gone(): void {
    this.detach();
    this.reject(new ClientClosedError());
  }
}
