/**
 * A provider's stream on its way to the caller: times its events for the stream metrics and reports the
 * outcome (usage, or the error, or the caller leaving) exactly once when it ends, since that report also
 * gives back the provider's call slot. A class, so its generators are methods on the prototype rather
 * than functions made per request (see provider-stream.ts for what those cost the garbage collector).
 */
import { performance } from "node:perf_hooks";
import { GatewayError } from "../errors.js";
import type { ChunkStream, JsonObject, ProviderStream, TokenUsage } from "../providers/types.js";
import type { InferenceObserver } from "../telemetry/inference-observer.js";
import type { BaseLabels } from "../telemetry/metrics.js";
import type { AttemptSpan } from "../telemetry/tracing.js";

/** Called once when the stream ends: the usage read, and null or what ended it early. */
export type StreamEnd = (usage: TokenUsage | null, err: unknown) => void;

/** The relay of one stream; iterate it (or its batches, when the provider's stream has them) once. */
export class RelayedStream implements ChunkStream {
  private last: number;
  private first = true;
  /** Present only when the provider's stream can hand over its events in batches. */
  readonly batches?: () => AsyncIterable<readonly JsonObject[]>;

  constructor(
    private readonly stream: ProviderStream,
    private readonly onEnd: StreamEnd,
    private readonly observer: InferenceObserver,
    private readonly base: BaseLabels,
    /** When the request arrived (performance.now()): the first event's time counts from it. */
    private readonly startedAt: number,
    private readonly span: AttemptSpan | undefined,
  ) {
    this.last = startedAt;
    if (stream.batches !== undefined) this.batches = this.relayBatches;
  }

  /** Records `count` events that arrived together now: the first timed from the one before, the rest 0 s after it. */
  arrived(count: number): void {
    const now = performance.now();
    let rest = count;
    if (this.first) {
      this.first = false;
      this.observer.firstToken(this.base, (now - this.startedAt) / 1000);
      this.span?.firstToken();
      rest--;
      if (rest > 0) this.observer.chunks(this.base, 0, rest);
    } else this.observer.chunks(this.base, (now - this.last) / 1000, rest);
    this.last = now;
  }

  [Symbol.asyncIterator](): AsyncGenerator<JsonObject> {
    return this.relay();
  }

  private relayBatches(): AsyncIterableIterator<readonly JsonObject[]> {
    const batches = this.stream.batches?.();
    if (batches === undefined) throw new Error("relayed stream has no batches");
    return new RelayedBatches(this, batches[Symbol.asyncIterator]());
  }

  /** Passes the provider's events through one at a time, timing each, then reports the end. */
  private async *relay(): AsyncGenerator<JsonObject> {
    let ended = false;
    let failure: unknown = null;
    try {
      for await (const event of this.stream) {
        this.arrived(1);
        yield event;
      }
      ended = true;
    } catch (err) {
      ended = true;
      failure = err;
      throw err;
    } finally {
      this.finish(ended, failure);
    }
  }

  /** Reports the end (once per stream: each way of iterating calls it once): `ended` when the stream ran out or failed (`failure`), false when its consumer left first. */
  finish(ended: boolean, failure: unknown): void {
    this.onEnd(this.stream.usage(), ended ? failure : new GatewayError("unavailable", "the client closed the stream", { type: "caller_closed_request", httpStatus: 499 }));
  }
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * The relay of a stream's batches as a plain iterator over the provider's: a batch then costs the one
 * promise of the source's `next` and a `then`, where an async generator around it cost each batch its own
 * `next` promise, an await of the source and an await at its yield.
 */
class RelayedBatches implements AsyncIterableIterator<readonly JsonObject[]> {
  private over = false;

  constructor(
    private readonly relayed: RelayedStream,
    private readonly source: AsyncIterator<readonly JsonObject[]>,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<readonly JsonObject[]>> {
    if (this.over) return Promise.resolve(DONE);
    return this.source.next().then(
      (result) => this.passed(result),
      (err: unknown) => {
        this.end(true, err);
        throw err;
      },
    );
  }

  private passed(result: IteratorResult<readonly JsonObject[]>): IteratorResult<readonly JsonObject[]> {
    if (result.done === true) {
      this.end(true, null);
      return result;
    }
    try {
      this.relayed.arrived(result.value.length);
    } catch (err) {
      // As a generator's loop would: the source is closed (its upstream given back) and the failure reported.
      this.source.return?.()?.catch(() => undefined);
      this.end(true, err);
      throw err;
    }
    return result;
  }

  /** The consumer left before the end: the source gives back its upstream first, then the end is reported. */
  async return(): Promise<IteratorResult<readonly JsonObject[]>> {
    if (this.over) return DONE;
    try {
      await this.source.return?.();
    } finally {
      this.end(false, null);
    }
    return DONE;
  }

  private end(ended: boolean, failure: unknown): void {
    if (this.over) return;
    this.over = true;
    this.relayed.finish(ended, failure);
  }
}
