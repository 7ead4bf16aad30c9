/**
 * HTTP to upstream providers over an undici dispatcher (an adapter's UpstreamPool agent, one keep-alive
 * pool per origin). Every failure leaves here as a ProviderError, except the caller's own abort, which is
 * rethrown as is.
 */
import { performance } from "node:perf_hooks";
import { boundedCache } from "../../bounded-cache.js";
import type { AbortSource } from "../../cancellation.js";
import { errors as undiciErrors, type Dispatcher } from "undici";
import { GatewayError } from "../../errors.js";
import { fromUpstreamStatus, ProviderError, upstreamErrorMessage, upstreamText } from "../provider-error.js";
import { sentCredentials, withoutCredentials } from "./sent-credentials.js";
import { unwatchDeadline, watchDeadline, type Deadlined } from "./call-deadlines.js";
import type { CallOptions, JsonObject } from "../types.js";

/** Generous default: a long completion may take minutes before its headers arrive. */
const DEFAULT_TIMEOUT_MS = 600_000;

/** Default bound on the silence between two chunks of an answer: a model thinking aloud still sends keep-alives. */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

/** Default cap on one answer (16 MiB, the size of the largest request the gateway accepts). */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** One upstream call. */
export interface UpstreamCall {
  method: "GET" | "POST";
  url: string;
  /** The provider's own headers (its auth, API version, ...): lower-case names, winning over forwarded ones. */
  headers: Record<string, string>;
  /** The caller's headers that client.allowed_headers lets through (lower-case names). */
  forwardedHeaders?: Readonly<Record<string, string>> | undefined;
  /** A JSON object, or JSON already encoded (text, or the client's own bytes). */
  body?: JsonObject | string | Uint8Array;
  signal?: AbortSource | undefined;
  timeoutMs?: number | undefined;
  /** The longest silence between two body chunks. */
  idleTimeoutMs?: number | undefined;
  /** The most bytes of answer read, error bodies included. */
  maxResponseBytes?: number | undefined;
}

/** A POST of `body` to `url` with the provider's `headers`, carrying the call's forwarded headers, abort and timeout. */
export function postCall(url: string, headers: Record<string, string>, body: JsonObject | string | Uint8Array, options: Omit<CallOptions, "key">): UpstreamCall {
  return { method: "POST", url, headers, forwardedHeaders: options.headers, body, ...callLimits(options) };
}

/** A GET of `url` with the provider's `headers`, bounded by the call's abort and timeout. */
export function getCall(url: string, headers: Record<string, string>, options: Omit<CallOptions, "key">): UpstreamCall {
  return { method: "GET", url, headers, ...callLimits(options) };
}

/** The abort, timeouts and size cap of an UpstreamCall, taken from the call's options. */
export function callLimits(options: Omit<CallOptions, "key">): Pick<UpstreamCall, "signal" | "timeoutMs" | "idleTimeoutMs" | "maxResponseBytes"> {
  return { signal: options.signal, timeoutMs: options.timeoutMs, idleTimeoutMs: options.idleTimeoutMs, maxResponseBytes: options.maxResponseBytes };
}

/** A 2xx upstream answer whose body is still unread. */
export interface UpstreamResponse {
  status: number;
  body: UpstreamBody;
  /** The most bytes the body may have; reading past it is a provider error. */
  maxBytes: number;
  /** The content-type header, lower-cased ("" when absent). */
  contentType: string;
}

/** The body of a streamed answer: its chunks in order, read once; destroying it aborts the request. */
export interface UpstreamBody extends AsyncIterable<Buffer> {
  readonly destroyed: boolean;
  destroy(): void;
}

/** A 2xx upstream answer read to its end: the JSON object and the text it was parsed from. */
export interface UpstreamJson {
  status: number;
  body: JsonObject;
  /** The body as the upstream sent it (a leading UTF-8 BOM removed), for forwarding without re-serialising. */
  text: string;
}

/**
 * Cuts an upstream call short when its response headers take longer than the timeout, when its body sends
 * nothing for longer than the idle timeout, or when the caller aborts. What cutting short means is the
 * subclass's `cut`. Both waits are deadlines on the calls' shared clock (call-deadlines.ts), and undici's own
 * headersTimeout and bodyTimeout are off for the call.
 */
abstract class CallGuard implements Deadlined {
  deadline = Infinity;
  deadlineSlot = -1;
  /** The response headers are in: the deadline bounds the silence between the body's chunks. */
  private inBody = false;
  private timeoutMs = DEFAULT_TIMEOUT_MS;
  private idleMs = DEFAULT_IDLE_TIMEOUT_MS;

  constructor(
    protected readonly provider: string,
    protected readonly caller: AbortSource | undefined,
  ) {}

  /** Not done in the constructor: `cut` may run at once, and must see the subclass fully built. */
  protected arm(timeoutMs: number, idleMs: number): void {
    const caller = this.caller;
    if (caller?.aborted) {
      this.cut(caller.reason);
      return;
    }
    // The guard itself is the abort listener (handleEvent), so arming allocates no closure; AbortSignal.any
    // would cost far more per call on Node 20.
    caller?.addEventListener("abort", this, { once: true });
    this.timeoutMs = timeoutMs;
    this.idleMs = idleMs;
    this.deadline = performance.now() + timeoutMs;
    watchDeadline(this);
  }

  /** The caller's abort. */
  handleEvent(): void {
    this.cut(this.caller?.reason);
  }

  /** Headers arrived: from here on the deadline bounds the gaps between the body's chunks. */
  protected startIdleClock(): void {
    this.inBody = true;
    this.deadline = performance.now() + this.idleMs;
  }

  /** A chunk of the body arrived: the gap before the next one starts now. */
  protected restartIdleClock(): void {
    this.deadline = performance.now() + this.idleMs;
  }

  /** Reading is paused for a reader that is behind (true), or resumed: a paused body is not idle. */
  protected holdIdleClock(paused: boolean): void {
    this.deadline = paused ? Infinity : performance.now() + this.idleMs;
  }

  /** The call is over: a long-lived caller signal must not keep one listener per call. */
  protected release(): void {
    unwatchDeadline(this);
    this.caller?.removeEventListener("abort", this);
  }

  overdue(): void {
    const provider = this.provider;
    this.cut(
      this.inBody
        ? new ProviderError(provider, null, "provider_timeout", `${provider} did not answer in time: its answer sent nothing for ${this.idleMs} ms`)
        : new ProviderError(provider, null, "provider_timeout", `${provider} sent no response headers within ${this.timeoutMs} ms`),
    );
  }

  protected abstract cut(reason: unknown): void;
}

/**
 * Sends the call and waits for the headers, leaving the body to be streamed. A non-2xx status is read
 * to its end and thrown as a ProviderError, so the connection goes back to the pool.
 */
export function send(dispatcher: Dispatcher, provider: string, call: UpstreamCall): Promise<UpstreamResponse> {
  return new Promise<UpstreamResponse>((resolve, reject) => {
    new StreamCall(provider, call.signal, resolve, reject).start(dispatcher, call);
  });
}

/**
 * Sends a call whose answer is one JSON object and reads it whole. A non-2xx status is read to its end
 * and thrown as a ProviderError; failures are classified as `send` and `transportError` do.
 */
export function sendJson(dispatcher: Dispatcher, provider: string, call: UpstreamCall): Promise<UpstreamJson> {
  return new Promise<UpstreamJson>((resolve, reject) => {
    new JsonCall(provider, call.signal, resolve, reject).start(dispatcher, call);
  });
}

/**
 * One upstream call as an undici dispatch handler, up to its response headers, and the reading of an
 * error answer. undici's request() would wrap the body in a Readable stream, the handler in an
 * AsyncResource and the abort in an AbortController: a call that reads its body as it comes needs none.
 */
abstract class DispatchedCall<T> extends CallGuard implements Dispatcher.DispatchHandler {
  /** Set once the promise has settled; undici may still call in afterwards. */
  protected settled = false;
  /** Why the call was cut before undici started it; it is aborted as soon as it starts. */
  private cutReason: Error | null = null;
  private controller: Dispatcher.DispatchController | null = null;
  protected status = 0;
  private retryAfter: string | string[] | undefined;
  private chunks: Buffer[] = [];
  private length = 0;
  protected maxBytes = DEFAULT_MAX_RESPONSE_BYTES;
  /** The call's headers and URL: an error blanks out what they sent as credentials (worked out only then). */
  private sent: { headers: Readonly<Record<string, string>>; url: string } = { headers: {}, url: "" };

  constructor(
    provider: string,
    caller: AbortSource | undefined,
    protected readonly resolve: (answer: T) => void,
    protected readonly reject: (err: unknown) => void,
  ) {
    super(provider, caller);
  }

  start(dispatcher: Dispatcher, call: UpstreamCall): void {
    this.sent = { headers: call.headers, url: call.url };
    const timeout = call.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxBytes = call.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.arm(timeout, call.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS);
    if (this.settled) return;
    try {
      const url = dispatchTarget(call.url);
      dispatcher.dispatch(
        {
          origin: url.origin,
          path: url.path,
          method: call.method,
          headers: requestHeaders(call),
          body: encodeBody(call.body),
          // The guard's deadlines bound both waits (see CallGuard).
          headersTimeout: 0,
          bodyTimeout: 0,
        },
        this,
      );
    } catch (err) {
      // undici's own dispatchers report through onResponseError; a bad URL or another dispatcher may throw.
      this.fail(err);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // A retried request starts again with a new controller; aborting must reach the current one.
    this.controller = controller;
    if (this.cutReason) controller.abort(this.cutReason);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx informational answers are followed by the real one, and do not end the wait for it.
    if (statusCode < 200) return;
    this.startIdleClock();
    this.status = statusCode;
    this.retryAfter = headers["retry-after"];
    this.answered(headers);
  }

  /** The final response's headers are in (status set). */
  protected answered(_headers: Record<string, string | string[] | undefined>): void {}

  /** True while the answer is an error status, read whole to be thrown. */
  protected get failedStatus(): boolean {
    return this.status < 200 || this.status >= 300;
  }

  /** Keeps a chunk of an answer read whole, cutting the call once it passes maxBytes. */
  protected collect(chunk: Buffer): void {
    if (this.settled) return;
    this.restartIdleClock();
    this.length += chunk.length;
    if (this.length > this.maxBytes) {
      // Dropping what was read frees it now; cutting aborts the request, so the socket is not reused.
      this.chunks = [];
      this.cut(tooLarge(this.provider, this.maxBytes));
      return;
    }
    this.chunks.push(chunk);
  }

  /** The whole answer read by collect(), as text. */
  protected collected(): string {
    return decodeUtf8(this.chunks, this.length);
  }

  /** Settles with the error status's ProviderError, from the answer read whole. */
  protected rejectStatus(): void {
    this.settle();
    this.reject(fromUpstreamStatus(this.provider, this.status, this.redacted(this.collected()), this.retryAfter));
  }

  /** Upstream text with the call's credentials blanked out. */
  protected redacted(text: string): string {
    return withoutCredentials(text, sentCredentials(this.sent.headers, this.sent.url));
  }

  /** Marks the promise settled and the guard done with. */
  protected settle(): void {
    this.settled = true;
    this.release();
  }

  /** Rejects the pending promise with `reason` and aborts the request. */
  protected cut(reason: unknown): void {
    if (this.settled) return;
    this.settle();
    this.reject(reason);
    this.abort(reason);
  }

  /** Aborts the request in undici (at once, or as soon as it starts). */
  protected abort(reason: unknown): void {
    // undici wants an Error; the reason it reports back is not what the caller sees.
    const abortReason = reason instanceof Error ? reason : new undiciErrors.RequestAbortedError();
    if (this.controller) this.controller.abort(abortReason);
    else this.cutReason = abortReason;
  }

  /** Pauses or resumes reading the answer from the socket. */
  protected flow(paused: boolean): void {
    this.holdIdleClock(paused);
    if (paused) this.controller?.pause();
    else this.controller?.resume();
  }

  protected fail(err: unknown): void {
    if (this.settled) return;
    this.settle();
    this.reject(transportError(this.provider, err, this.caller));
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.fail(err);
  }

  abstract onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  abstract onResponseEnd(controller: Dispatcher.DispatchController, trailers: Record<string, string | string[] | undefined>): void;
}

/** One sendJson call: the answer read whole, then parsed. */
class JsonCall extends DispatchedCall<UpstreamJson> {
  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.collect(chunk);
  }

  onResponseEnd(): void {
    if (this.settled) return;
    if (this.failedStatus) {
      this.rejectStatus();
      return;
    }
    this.settle();
    const text = this.collected();
    const body = parseJsonObject(text);
    if (body === null) this.reject(notJsonObject(this.provider, this.status, this.redacted(text)));
    else if (isErrorAnswer(body)) this.reject(errorAnswer(this.provider, this.status, this.redacted(text)));
    else this.resolve({ status: this.status, body, text });
  }
}

/** Bytes held for a reader that is behind before the socket is paused; reading them resumes it. */
const HIGH_WATER_BYTES = 256 * 1024;

/** Hands a StreamCall's queued chunks to its waiting reader, once the read that brought them is parsed. */
function deliver(call: StreamCall): void {
  call.deliver();
}

/**
 * One send() call: settles with the response at its 2xx headers, and is then the response's body, an
 * async iterator over what undici reads, the socket paused while the reader is behind. undici hands over
 * each HTTP chunk of a chunked answer on its own (an upstream writing one event per chunk sends many in
 * one network read), so the reader gets everything read so far joined into one buffer, as a Readable
 * stream's read() does: one step of the reader's loop per network read, not per HTTP chunk. The
 * caller's abort keeps reaching the request until the body has ended, since the stream's consumer may
 * abort at any point.
 */
class StreamCall extends DispatchedCall<UpstreamResponse> implements UpstreamBody, AsyncIterator<Buffer> {
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private paused = false;
  private ended = false;
  /** What ended the body early, thrown to the reader once what was read before it is taken. */
  private failure: unknown = null;
  private waiter: { resolve: (result: IteratorResult<Buffer>) => void; reject: (err: unknown) => void } | null = null;
  /** A delivery to the waiting reader is scheduled. */
  private delivering = false;
  /** In the body phase: the response was handed over. */
  private streaming = false;
  destroyed = false;

  protected override answered(headers: Record<string, string | string[] | undefined>): void {
    if (this.settled || this.failedStatus) return;
    this.streaming = true;
    // The promise settles, but the guard stays armed against the caller's abort until the body is done.
    this.settled = true;
    const contentType = headers["content-type"];
    this.resolve({ status: this.status, body: this, maxBytes: this.maxBytes, contentType: typeof contentType === "string" ? contentType.toLowerCase() : "" });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.streaming) {
      this.collect(chunk);
      return;
    }
    if (this.destroyed) return;
    this.restartIdleClock();
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    if (this.waiter !== null) {
      // The rest of this network read is parsed before the reader wakes: it gets the whole read at once.
      if (!this.delivering) {
        this.delivering = true;
        process.nextTick(deliver, this);
      }
    } else if (!this.paused && this.queuedBytes >= HIGH_WATER_BYTES) {
      this.paused = true;
      this.flow(true);
    }
  }

  onResponseEnd(): void {
    if (!this.streaming) {
      if (!this.settled) this.rejectStatus();
      return;
    }
    this.finishBody(null);
  }

  override onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    if (this.streaming) this.finishBody(err);
    else super.onResponseError(controller, err);
  }

  protected override cut(reason: unknown): void {
    if (!this.streaming) {
      super.cut(reason);
      return;
    }
    // The caller aborted while the body was being read: the reader gets the abort's reason.
    if (this.ended || this.destroyed) return;
    this.abort(reason);
    this.finishBody(reason);
  }

  /** The body is over: ended (err null) or failed; the reader learns of it once the queue is taken. */
  private finishBody(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    this.release();
    if (this.waiter !== null && !this.delivering) this.deliver();
  }

  /** Wakes the waiting reader with what is queued, or with the end of the body. */
  deliver(): void {
    this.delivering = false;
    const waiter = this.waiter;
    if (waiter === null) return;
    this.waiter = null;
    this.settleRead(waiter.resolve, waiter.reject);
  }

  /** Answers a read: the queued bytes, else the failure (once), else the end. */
  private settleRead(resolve: (result: IteratorResult<Buffer>) => void, reject: (err: unknown) => void): void {
    if (this.queue.length > 0) {
      resolve({ value: this.take(), done: false });
      return;
    }
    const failure = this.failure;
    if (failure !== null && !this.destroyed) {
      this.failure = null;
      reject(failure);
      return;
    }
    resolve({ value: undefined, done: true });
  }

  /** Everything queued, as one buffer; resumes a paused socket. */
  private take(): Buffer {
    const queue = this.queue;
    const bytes = queue.length === 1 ? (queue[0] as Buffer) : Buffer.concat(queue, this.queuedBytes);
    this.queue = [];
    this.queuedBytes = 0;
    if (this.paused) {
      this.paused = false;
      this.flow(false);
    }
    return bytes;
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return this;
  }

  next(): Promise<IteratorResult<Buffer>> {
    if (this.queue.length > 0 || this.ended || this.destroyed) {
      return new Promise((resolve, reject) => this.settleRead(resolve, reject));
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** A reader that stops early (break, return or throw in its loop) destroys the body. */
  return(): Promise<IteratorResult<Buffer>> {
    this.destroy();
    return Promise.resolve({ value: undefined, done: true });
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.queue = [];
    this.queuedBytes = 0;
    // An unfinished body holds the socket: aborting the request closes it rather than reuse it half-read.
    if (!this.ended) {
      this.abort(new undiciErrors.RequestAbortedError());
      this.finishBody(null);
    }
  }
}

/** Parsed upstream URLs: a provider calls the same few URLs over and over. */
const MAX_CACHED_TARGETS = 1_000;
const targets = boundedCache<string, { origin: string; path: string }>(MAX_CACHED_TARGETS);

/** The origin and path of an upstream URL, parsed once per distinct URL. */
function dispatchTarget(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: parsed.pathname + parsed.search };
    targets.set(url, target);
  }
  return target;
}

function encodeBody(body: JsonObject | string | Uint8Array | undefined): string | Uint8Array | null {
  if (body === undefined) return null;
  return typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
}

/**
 * The headers sent: the provider's own headers win over the body's content type, which wins over the
 * forwarded ones. Built by assignment: an object literal with a spread after another spread or a
 * property (`{ ...a, b, ...c }`) leaves V8's fast clone path, which every traced call paid for.
 */
function requestHeaders(call: UpstreamCall): Record<string, string> {
  const forwarded = call.forwardedHeaders;
  if (forwarded === undefined) return call.body === undefined ? call.headers : { "content-type": "application/json", ...call.headers };
  const headers: Record<string, string> = call.body === undefined ? {} : { "content-type": "application/json" };
  for (const name in forwarded) if (headers[name] === undefined) headers[name] = forwarded[name] as string;
  const own = call.headers;
  for (const name in own) headers[name] = own[name] as string;
  return headers;
}

/** Decodes as undici's body.text() does: UTF-8, a leading BOM dropped. */
function decodeUtf8(chunks: Buffer[], length: number): string {
  if (length === 0) return "";
  const buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  const start = buffer.length > 2 && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf ? 3 : 0;
  return buffer.toString("utf8", start);
}

/** Parses JSON text that should be one object (an answer, an SSE event's data); null when it is not one. */
export function parseJsonObject(text: string): JsonObject | null {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as JsonObject;
  } catch {
    // The caller reports the text that failed.
  }
  return null;
}

/**
 * A stream event's data as the JSON object it must be. Skipping one that is not would hand the caller a
 * silently shortened answer, reported as a success: it fails the stream instead.
 */
export function streamEventObject(provider: string, data: string): JsonObject {
  const payload = parseJsonObject(data);
  if (payload === null) throw new ProviderError(provider, null, "provider_unavailable", `${provider} sent a stream event that is not a JSON object: ${upstreamText(data, 200)}`);
  return payload;
}

/**
 * The error of a stream whose body ended before the event that ends an answer (`missing` names it): the
 * upstream was cut off, and passing the end on would report a shortened answer as complete.
 */
export function streamCutShort(provider: string, missing: string): ProviderError {
  return new ProviderError(provider, null, "provider_unavailable", `${provider} ended its stream before the answer was complete (no ${missing})`);
}

/** The error of an answer longer than the provider's max_response_bytes. */
export function tooLarge(provider: string, maxBytes: number): ProviderError {
  return new ProviderError(provider, null, "provider_unavailable", `${provider} sent an answer longer than ${maxBytes} bytes (network_config.max_response_bytes); it was cut off`);
}

/**
 * True for a 2xx answer that reports a failure in the body instead of its status: an `error` object or
 * message at the top (OpenRouter and others; Anthropic's `{"type": "error", ...}`). No success answer of
 * the APIs the gateway speaks has one (the Responses API's is null).
 */
function isErrorAnswer(body: JsonObject): boolean {
  const error = body["error"];
  return (typeof error === "object" && error !== null) || (typeof error === "string" && error !== "");
}

/** The error of a 2xx answer that reports a failure in its body. */
function errorAnswer(provider: string, status: number, text: string): ProviderError {
  return new ProviderError(provider, status, "provider_unavailable", `${provider} answered HTTP ${status} with an error in the body: ${upstreamErrorMessage(text)}`);
}

/** The error of an answer that is not a JSON object. */
function notJsonObject(provider: string, status: number, text: string): ProviderError {
  return new ProviderError(provider, status, "provider_unavailable", `${provider} answered HTTP ${status} with a body that is not a JSON object: ${upstreamText(text, 200)}`);
}

/**
 * Classifies a failure with no usable response: the caller's abort is rethrown unchanged (nobody is
 * left to answer), timeouts become provider_timeout, anything else provider_unavailable.
 */
export function transportError(provider: string, err: unknown, signal?: AbortSource): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof GatewayError) return err;
  if (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError
  ) {
    return new ProviderError(provider, null, "provider_timeout", `${provider} did not answer in time: ${upstreamText(err.message)}`, err);
  }
  const message = err instanceof Error ? err.message || err.name : String(err);
  // Errors that already end with their code (an egress refusal) are not given it twice.
  const code = err instanceof Error && "code" in err && typeof err.code === "string" && !message.endsWith(`(${err.code})`) ? ` (${err.code})` : "";
  return new ProviderError(provider, null, "provider_unavailable", `${provider} could not be reached: ${upstreamText(message)}${code}`, err);
}

/** Joins a base URL and a path, dropping trailing slashes and a trailing `/v1` the path adds again. */
export function joinUrl(baseUrl: string, path: string): string {
  let base = baseUrl.replace(/\/+$/, "");
  if (path.startsWith("/v1/") && base.endsWith("/v1")) base = base.slice(0, -3);
  return `${base}${path}`;
}
