/**
 * The batch queue between ended spans and the collector, bounded in spans. Spans that end during a turn of
 * the event loop are encoded together on the next turn into the batch that is filling (SpanBatch): the
 * encoder then runs warm over many spans, where encoding each span as it ended, between the other work of
 * its request, cost it several times as much; a span waits one turn, too short for the garbage collector
 * to move it. A full batch leaves at once, a partial one from a timer, never inside the request that ended
 * a span. One export is in flight at a time. A full queue drops the new span; a failed export loses its
 * batch; both are counted, never retried at a request's expense. A batch encodes into the buffer of the
 * last one the collector took.
 */
import { SpanBatch } from "./otlp-protobuf.js";
import type { RecordingSpan } from "./recording-tracer.js";

/** The largest buffer kept for the next batch: one that spans with large content grew is let go. */
const MAX_SPARE_BYTES = 1024 * 1024;

/** Sends one encoded batch; rejects (with a reason the log can show) when the collector did not take it. */
export type BatchSender = (batch: SpanBatch) => Promise<void>;

/** Counts what was lost, for the once-a-minute report. */
export type LossReport = (count: number, reason: string) => void;

/** How the queue batches. */
export interface SpanQueueOptions {
  /** Spans kept while the collector is slow; more are dropped. */
  maxQueueSize: number;
  /** Spans per export at most. */
  maxBatchSize: number;
  /** How long an ended span waits for a batch to fill before it is sent anyway. */
  delayMs: number;
}

/** The bounded batch queue in front of a sender. */
export class SpanExportQueue {
  /** Batches waiting, oldest first; only the last one may still be filling. */
  private batches: SpanBatch[] = [];
  /** Spans in the batches. */
  private queued = 0;
  /** Spans ended since the last encoding, in the order they ended. */
  private ended: RecordingSpan[] = [];
  private encoding: NodeJS.Immediate | undefined;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private inFlight: Promise<void> | undefined;
  private closed = false;
  /** The buffer of the last batch the collector took, which the next batch encodes into. */
  private spare: Buffer | undefined;

  constructor(
    private readonly send: BatchSender,
    private readonly lost: LossReport,
    private readonly options: SpanQueueOptions,
  ) {}

  /** Queues an ended span (the tracer's sink) to be encoded on the next turn; never throws into the request. */
  readonly add = (span: RecordingSpan): void => {
    if (this.closed) return;
    if (this.queued + this.ended.length >= this.options.maxQueueSize) {
      this.lost(1, "the export queue is full (the collector is slow or unreachable)");
      return;
    }
    if (this.ended.push(span) === 1) {
      this.encoding = setImmediate(this.encodeEnded);
      this.encoding.unref();
    }
  };

  /** Spans waiting to be sent. */
  get size(): number {
    return this.queued + this.ended.length;
  }

  /** Encodes the spans that ended into the batches, then sends a full batch or times a partial one. */
  private readonly encodeEnded = (): void => {
    if (this.encoding !== undefined) clearImmediate(this.encoding);
    this.encoding = undefined;
    for (const span of this.ended) this.encode(span);
    this.ended.length = 0;
    if (this.inFlight !== undefined || this.closed) return;
    if ((this.batches[0]?.count ?? 0) >= this.options.maxBatchSize) void this.flushOne();
    else this.schedule();
  };

  /** Encodes `span` into the batch that is filling, a new one when it is full. */
  private encode(span: RecordingSpan): void {
    let batch = this.batches.at(-1);
    if (batch === undefined || batch.count >= this.options.maxBatchSize) {
      batch = new SpanBatch(this.spare);
      this.spare = undefined;
      this.batches.push(batch);
    }
    try {
      batch.add(span);
    } catch (err) {
      this.lost(1, `a span could not be encoded: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    this.queued++;
  }

  /** Sends a full batch on the next turn, a partial one once the delay passes. */
  private schedule(): void {
    if ((this.batches[0]?.count ?? 0) >= this.options.maxBatchSize) {
      if (this.immediate !== undefined) return;
      this.immediate = setImmediate(() => {
        this.immediate = undefined;
        void this.flushOne();
      });
      this.immediate.unref();
    } else if (this.queued > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flushOne();
      }, this.options.delayMs);
      this.timer.unref();
    }
  }

  /** Sends one batch unless one is in flight; afterwards, sends on what is waiting. */
  private flushOne(): Promise<void> {
    if (this.inFlight !== undefined) return this.inFlight;
    const batch = this.batches.shift();
    if (batch === undefined) return Promise.resolve();
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.queued -= batch.count;
    let sending: Promise<void>;
    try {
      sending = this.send(batch);
    } catch (err) {
      // An encoding failure loses its batch like a failed export: it must never throw into a timer.
      sending = Promise.reject(err);
    }
    const done = sending.then(
      () => {
        // Only a batch the collector took has been sent whole; a failed send may still hold its bytes.
        if (batch.buffer.length <= MAX_SPARE_BYTES) this.spare = batch.buffer;
      },
      (err: unknown) => this.lost(batch.count, err instanceof Error ? err.message : String(err)),
    );
    this.inFlight = done.then(() => {
      this.inFlight = undefined;
      if (!this.closed) this.schedule();
    });
    return this.inFlight;
  }

  /** Sends everything queued (batch after batch) until done or `deadline` (epoch ms), then stops taking spans. */
  async close(deadline: number): Promise<void> {
    this.closed = true;
    this.encodeEnded();
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
    while (Date.now() < deadline) {
      if (this.inFlight !== undefined) await this.inFlight;
      else if (this.queued > 0) await this.flushOne();
      else return;
    }
    if (this.queued > 0) this.lost(this.queued, "the gateway stopped before they could be exported");
    this.batches = [];
    this.queued = 0;
  }
}
