/**
 * A provider stream whose first events were read before the attempt counted as answered. An upstream can
 * send its response headers and then fail (go silent, close, send a broken event) before any event: read
 * first, that failure is the attempt's, so the key rotation and fallbacks apply. A class, for the reason
 * RelayedStream is one.
 */
import type { JsonObject, ProviderStream, TokenUsage } from "../providers/types.js";

/** Reads `stream`'s first batch (or first event); a failure to do so rejects, the stream released. */
export async function primeStream(stream: ProviderStream): Promise<ProviderStream> {
  if (stream.batches !== undefined) {
    const source = stream.batches()[Symbol.asyncIterator]();
    return new PrimedBatches(stream, source, await source.next());
  }
  const source = stream[Symbol.asyncIterator]();
  return new PrimedEvents(stream, source, await source.next());
}

/** The events of a stream read in batches, the first batch already read. */
class PrimedBatches implements ProviderStream {
  readonly status: number;

  constructor(
    private readonly stream: ProviderStream,
    private readonly source: AsyncIterator<readonly JsonObject[]>,
    private readonly first: IteratorResult<readonly JsonObject[]>,
  ) {
    this.status = stream.status;
  }

  usage(): TokenUsage | null {
    return this.stream.usage();
  }

  batches(): AsyncIterableIterator<readonly JsonObject[]> {
    return new Replay(this.source, this.first);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<JsonObject> {
    for await (const batch of this.batches()) yield* batch;
  }
}

/** The events of a stream read one at a time, the first already read. */
class PrimedEvents implements ProviderStream {
  readonly status: number;

  constructor(
    private readonly stream: ProviderStream,
    private readonly source: AsyncIterator<JsonObject>,
    private readonly first: IteratorResult<JsonObject>,
  ) {
    this.status = stream.status;
  }

  usage(): TokenUsage | null {
    return this.stream.usage();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<JsonObject> {
    return new Replay(this.source, this.first);
  }
}

/** An iterator that answers its first `next` with what was read already, then hands on to `source`. */
class Replay<T> implements AsyncIterableIterator<T> {
  private pending: IteratorResult<T> | null;

  constructor(
    private readonly source: AsyncIterator<T>,
    first: IteratorResult<T>,
  ) {
    this.pending = first;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<T>> {
    const pending = this.pending;
    if (pending === null) return this.source.next();
    this.pending = null;
    return Promise.resolve(pending);
  }

  /** The consumer left: the source gives back its upstream. */
  async return(): Promise<IteratorResult<T>> {
    this.pending = null;
    return (await this.source.return?.()) ?? { done: true, value: undefined };
  }
}
