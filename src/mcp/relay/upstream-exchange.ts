/**
 * The HTTP exchanges of one relayed upstream session on undici's dispatcher API: an answer's status and
 * headers as soon as they arrive, its body handed to its reader chunk by chunk. undici's request() wraps
 * every answer in a Node stream and an async resource, and reading an SSE answer through an async iterator
 * costs a promise per chunk; a relayed call paid more for those than for the bytes it carries.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import { headerValue } from "../../http-headers.js";
import { SseParser } from "../../providers/http/sse.js";
import { EventBytes, MAX_UPSTREAM_MESSAGE_BYTES, OversizedMessageError } from "../message-bound.js";

/** What reads an answer's body as it arrives. */
interface BodyReader {
  data(chunk: Buffer): void;
  end(): void;
  fail(err: Error): void;
}

/** One answer of the upstream: its status and headers, and its body, read once by one of the methods below. */
export class UpstreamAnswer {
  /** Chunks that came before a reader did. */
  private held: Buffer[] = [];
  private ended = false;
  private failure: Error | undefined;
  private reader: BodyReader | undefined;

  constructor(
    readonly statusCode: number,
    private readonly headers: IncomingHttpHeaders,
    private readonly controller: Dispatcher.DispatchController,
  ) {}

  /** A response header (the first, when repeated). */
  header(name: string): string | undefined {
    return headerValue(this.headers, name);
  }

  /** @internal The exchange's handler delivers the body here. */
  deliver(chunk: Buffer): void {
    if (this.reader === undefined) this.held.push(chunk);
    else this.reader.data(chunk);
  }

  /** @internal The body is complete. */
  complete(): void {
    this.ended = true;
    this.reader?.end();
  }

  /** @internal The body failed part way. */
  broke(err: Error): void {
    this.failure = err;
    this.reader?.fail(err);
  }

  /** Reads the body with `reader`, chunks that came first included; resolves at its end. */
  private read(start: (resolve: () => void, reject: (err: Error) => void) => Omit<BodyReader, "fail">): Promise<void> {
    return new Promise((resolve, reject) => {
      const reader = start(resolve, reject);
      // A reader that throws ends the exchange: nothing more of the body is wanted.
      const guarded: BodyReader = {
        data: (chunk) => {
          try {
            reader.data(chunk);
          } catch (err) {
            this.reader = IGNORE;
            this.controller.abort(err instanceof Error ? err : new Error(String(err)));
            reject(err);
          }
        },
        end: () => reader.end(),
        fail: reject,
      };
      for (const chunk of this.held.splice(0)) guarded.data(chunk);
      if (this.reader === IGNORE) return;
      this.reader = guarded;
      if (this.failure !== undefined) reject(this.failure);
      else if (this.ended) guarded.end();
    });
  }

  /** The body as UTF-8 text; rejects with OversizedMessageError, the rest unread, once it passes `maxBytes`. */
  async text(maxBytes = MAX_UPSTREAM_MESSAGE_BYTES): Promise<string> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    await this.read((resolve) => ({
      data: (chunk) => {
        bytes += chunk.length;
        if (bytes > maxBytes) throw new OversizedMessageError(maxBytes);
        chunks.push(chunk);
      },
      end: resolve,
    }));
    return Buffer.concat(chunks).toString("utf8");
  }

  /**
   * Reads the body as an event stream, calling `onData` with the data of each event that has any, until it
   * ends; rejects with OversizedMessageError, the rest unread, once an event passes `maxBytes`.
   */
  events(onData: (data: string) => void, maxBytes = MAX_UPSTREAM_MESSAGE_BYTES): Promise<void> {
    const parser = new SseParser();
    const counter = new EventBytes(maxBytes);
    return this.read((resolve) => ({
      data: (chunk) => {
        counter.add(chunk);
        for (const event of parser.push(chunk)) if (event.data !== "") onData(event.data);
      },
      end: () => {
        for (const event of parser.end()) if (event.data !== "") onData(event.data);
        resolve();
      },
    }));
  }

  /** Reads the body to its end and drops it. */
  dump(): Promise<void> {
    return this.read((resolve) => ({ data: () => undefined, end: resolve }));
  }
}

const IGNORE: BodyReader = { data: () => undefined, end: () => undefined, fail: () => undefined };

/** The exchanges of one upstream session, all of which stop() ends. */
export class UpstreamExchanges {
  private readonly live = new Set<Dispatcher.DispatchController>();
  private stopped: Error | undefined;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly url: URL,
  ) {}

  /** Sends one request; resolves with the answer once its headers are in. */
  send(method: "POST" | "GET" | "DELETE", headers: Record<string, string>, body?: string): Promise<UpstreamAnswer> {
    if (this.stopped !== undefined) return Promise.reject(this.stopped);
    const live = this.live;
    const exchanges = this;
    return new Promise((resolve, reject) => {
      let answer: UpstreamAnswer | undefined;
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(controller) {
          if (exchanges.stopped !== undefined) controller.abort(exchanges.stopped);
          else live.add(controller);
        },
        onResponseStart(controller, statusCode, responseHeaders) {
          // An informational answer comes before the real one.
          if (statusCode < 200) return;
          answer = new UpstreamAnswer(statusCode, responseHeaders, controller);
          resolve(answer);
        },
        onResponseData(_controller, chunk) {
          answer?.deliver(chunk);
        },
        onResponseEnd(controller) {
          live.delete(controller);
          answer?.complete();
        },
        onResponseError(controller, err) {
          live.delete(controller);
          if (answer === undefined) reject(err);
          else answer.broke(err);
        },
      };
      this.dispatcher.dispatch({ origin: this.url.origin, path: `${this.url.pathname}${this.url.search}`, method, headers, body: body ?? null }, handler);
    });
  }

  /** Aborts every exchange in flight with `reason` and refuses new ones. */
  stop(reason: Error): void {
    this.stopped = reason;
    for (const controller of this.live) controller.abort(reason);
    this.live.clear();
  }
}
