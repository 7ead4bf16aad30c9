/** Wraps an upstream SSE body as a ProviderStream: single use, socket freed on early exit or abort. */
import type { AbortSource } from "../../cancellation.js";
import type { ProviderStream, JsonObject, TokenUsage } from "../types.js";
import { ProviderError, upstreamText } from "../provider-error.js";
import { rawTextOf, withWireText } from "../raw-event.js";
import { parseSse, SseParser, type SseByteLimit, type SseEvent } from "./sse.js";
import { tooLarge, transportError, type UpstreamResponse } from "./upstream-http.js";

/**
 * Turns the upstream's SSE events into OpenAI JSON events. It must read the body to its end (ignoring
 * anything after the upstream's end marker) so the keep-alive socket is reused.
 */
export type EventTranslator = (events: AsyncIterable<SseEvent>) => AsyncGenerator<JsonObject>;

/**
 * A translator that turns each event into at most one chunk on its own (null drops the event), so the
 * stream needs no async layer of its own for it: every layer of async iteration costs each chunk a promise
 * and a turn of the microtask queue.
 */
export interface EventMapper {
  map(event: SseEvent): JsonObject | null;
  /** Called once the body ended; throws when the events did not end an answer. */
  end?(): void;
}

/** Splits a response body into events; SSE unless the upstream frames its stream otherwise. */
export type EventDecoder = (body: AsyncIterable<Uint8Array>) => AsyncIterable<SseEvent>;

/**
 * Builds the stream; `usage` reads what the translator has collected. `decode` turns the body into
 * events (SSE by default; AWS event streams bring their own decoder).
 */
export function providerStream(
  provider: string,
  res: UpstreamResponse,
  signal: AbortSource | undefined,
  translate: EventTranslator | EventMapper,
  usage: () => TokenUsage | null,
  decode: EventDecoder = parseSse,
): ProviderStream {
  // An upstream that answers a stream request with JSON or a web page would otherwise look like an empty
  // stream; failing here, before any chunk, lets fallbacks take over.
  if (decode === parseSse && res.contentType !== "" && !res.contentType.includes("text/event-stream")) {
    res.body.destroy();
    throw new ProviderError(provider, res.status, "provider_unavailable", `${provider} answered a stream request with content type ${upstreamText(res.contentType, 100)} instead of text/event-stream`);
  }
  if (typeof translate !== "function" && decode === parseSse) return new MappedSseStream(provider, res, signal, translate, usage);
  return new UpstreamEventStream(provider, res, signal, translate, usage, decode);
}

/** Passes the body's chunks through, failing once they add up to more than `maxBytes`. */
async function* capped(provider: string, body: AsyncIterable<Uint8Array>, maxBytes: number): AsyncGenerator<Uint8Array> {
  let length = 0;
  for await (const chunk of body) {
    length += chunk.length;
    if (length > maxBytes) throw tooLarge(provider, maxBytes);
    yield chunk;
  }
}

/**
 * The stream as a class, so its generator is one method on the prototype. A generator function created
 * per request (a closure, or a method of an object literal) gets an initial map of its own, which V8
 * keeps in old space pointing back at the function: every young-generation GC then treats the
 * request's whole closure as live until the next full GC. Per-request generators made every streamed
 * request survive into old space and made the scavenge pauses much longer. The stream
 * translators and the Responses bridge follow the same rule: generators are module-level functions or
 * class methods, and per-request state travels as an argument or a field.
 */
class UpstreamEventStream implements ProviderStream {
  readonly status: number;
  private started = false;

  constructor(
    protected readonly provider: string,
    protected readonly res: UpstreamResponse,
    private readonly signal: AbortSource | undefined,
    private readonly translate: EventTranslator | EventMapper,
    readonly usage: () => TokenUsage | null,
    private readonly decode: EventDecoder,
  ) {
    this.status = res.status;
  }

  /** The bound on the answer's bytes, as the SSE parser checks it. */
  protected limit(): SseByteLimit {
    return { maxBytes: this.res.maxBytes, error: () => tooLarge(this.provider, this.res.maxBytes) };
  }

  /** Marks the stream read; a provider stream is single use. */
  protected start(): void {
    if (this.started) throw new Error(`${this.provider} stream iterated twice: a provider stream is single use`);
    this.started = true;
  }

  /** A failure while reading, as the error the caller sees (the abort's reason once aborted). */
  protected failed(err: unknown): unknown {
    return transportError(this.provider, err, this.signal);
  }

  /** An unfinished body (consumer broke out, or an error) would hold the socket: destroying it aborts the upstream request. */
  protected release(finished: boolean): void {
    if (!finished && !this.res.body.destroyed) this.res.body.destroy();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<JsonObject> {
    this.start();
    let finished = false;
    try {
      const translate = this.translate;
      const body = this.res.body;
      const events = this.decode === parseSse ? parseSse(body, this.limit()) : this.decode(capped(this.provider, body, this.res.maxBytes));
      if (typeof translate === "function") yield* translate(events);
      else
        for await (const event of events) {
          const chunk = translate.map(event);
          if (chunk !== null) yield chunk;
        }
      finished = true;
      if (typeof translate !== "function") translate.end?.();
    } catch (err) {
      throw this.failed(err);
    } finally {
      this.release(finished);
    }
  }
}

/**
 * The common case, an SSE stream mapped event by event: it iterates the body alone, since the parser is
 * synchronous and counts the bytes itself, so an event costs no async layer of its own; and it hands
 * over each network read's events as one batch to a consumer that takes them so.
 */
class MappedSseStream extends UpstreamEventStream {
  constructor(provider: string, res: UpstreamResponse, signal: AbortSource | undefined, private readonly mapper: EventMapper, usage: () => TokenUsage | null) {
    super(provider, res, signal, mapper, usage, parseSse);
  }

  override async *[Symbol.asyncIterator](): AsyncGenerator<JsonObject> {
    for await (const batch of this.batches()) for (const chunk of batch) yield chunk;
  }

  async *batches(): AsyncGenerator<readonly JsonObject[]> {
    this.start();
    let finished = false;
    try {
      const parser = new SseParser(this.limit());
      const mapper = this.mapper;
      const body = this.res.body;
      for (let read = body[Symbol.asyncIterator](); ; ) {
        const next = await read.next();
        const batch: JsonObject[] = [];
        try {
          const events = next.done === true ? parser.end() : parser.push(next.value as Uint8Array);
          // The leading events that became their chunk unchanged, each carrying the text it arrived as.
          let unchanged = 0;
          for (let index = 0; index < events.length; index++) {
            const event = events[index] as SseEvent;
            const chunk = mapper.map(event);
            if (chunk === null) continue;
            batch.push(chunk);
            if (unchanged === index && rawTextOf(chunk) === event.data) unchanged++;
          }
          const wire = Math.min(unchanged, parser.wireEvents);
          if (wire > 0) withWireText(batch, parser.wireText(wire), wire, parser.wireBytes(wire));
        } catch (err) {
          // The events before a failing one were sent before it: the caller gets them, then the failure.
          if (batch.length > 0) yield batch;
          throw err;
        }
        if (batch.length > 0) yield batch;
        if (next.done === true) break;
      }
      finished = true;
      mapper.end?.();
    } catch (err) {
      throw this.failed(err);
    } finally {
      this.release(finished);
    }
  }
}
