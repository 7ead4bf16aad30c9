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
  private arrived(count: number): void {
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
    return this.relay(this.stream, one);
  }

  private relayBatches(): AsyncGenerator<readonly JsonObject[]> {
    const batches = this.stream.batches?.();
    if (batches === undefined) throw new Error("relayed stream has no batches");
    return this.relay(batches, sizeOf);
  }

  /** Passes `source`'s items through, timing the events each holds (`events`), then reports the end. */
  private async *relay<T>(source: AsyncIterable<T>, events: (item: T) => number): AsyncGenerator<T> {
    let ended = false;
    let failure: unknown = null;
    try {
      for await (const item of source) {
        this.arrived(events(item));
        yield item;
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

  private finish(ended: boolean, failure: unknown): void {
    this.onEnd(this.stream.usage(), ended ? failure : new GatewayError("unavailable", "the client closed the stream", { type: "caller_closed_request", httpStatus: 499 }));
  }
}

function one(): number {
  return 1;
}

function sizeOf(batch: readonly JsonObject[]): number {
  return batch.length;
}
