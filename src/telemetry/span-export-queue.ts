/**
 * The batch queue between ended spans and the collector: ending a span only appends it, encoded, to the
 * open batch (EncodedSpans: no span object outlives its request); batches leave from a timer or, once a
 * full batch is waiting, on the next turn of the event loop, never inside the request that ended the span.
 * One export is in flight at a time. A full queue drops the new span; a failed export loses its batch; both
 * are counted, never retried at a request's expense.
 */
import { EncodedSpans } from "./otlp-protobuf.js";
import type { RecordingSpan } from "./recording-tracer.js";

/** Sends one batch; rejects (with a reason the log can show) when the collector did not take it. */
export type BatchSender = (spans: EncodedSpans) => Promise<void>;

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
  /** Full batches waiting while one is in flight, oldest first. */
  private full: EncodedSpans[] = [];
  /** The batch ended spans are appended to. */
  private open = new EncodedSpans();
  /** Spans in `full` and `open`. */
  private queued = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private inFlight: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly send: BatchSender,
    private readonly lost: LossReport,
    private readonly options: SpanQueueOptions,
  ) {}

  /** Queues an ended span (the tracer's sink): constant time, no I/O. */
  readonly add = (span: RecordingSpan): void => {
    if (this.closed) return;
    if (this.queued >= this.options.maxQueueSize) {
      this.lost(1, "the export queue is full (the collector is slow or unreachable)");
      return;
    }
    try {
      this.open.add(span);
    } catch (err) {
      // Ending a span must never fail the request that ends it: a span that cannot be encoded is lost.
      this.lost(1, `a span could not be encoded: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    this.queued++;
    if (this.open.count >= this.options.maxBatchSize) {
      this.full.push(this.open);
      this.open = new EncodedSpans();
    }
    if (this.inFlight === undefined) this.schedule();
  };

  /** Spans waiting to be sent. */
  get size(): number {
    return this.queued;
  }

  /** Sends a full batch on the next turn, a partial one once the delay passes. */
  private schedule(): void {
    if (this.full.length > 0) {
      if (this.immediate !== undefined) return;
      this.immediate = setImmediate(() => {
        this.immediate = undefined;
        void this.flushOne();
      });
      this.immediate.unref();
    } else if (this.open.count > 0 && this.timer === undefined) {
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
    if (this.queued === 0) return Promise.resolve();
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    let batch = this.full.shift();
    if (batch === undefined) {
      batch = this.open;
      this.open = new EncodedSpans();
    }
    this.queued -= batch.count;
    const sent = batch;
    let sending: Promise<void>;
    try {
      sending = this.send(sent);
    } catch (err) {
      // A sender that throws loses its batch like a failed export: it must never throw into a timer.
      sending = Promise.reject(err);
    }
    const done = sending.then(
      () => undefined,
      (err: unknown) => this.lost(sent.count, err instanceof Error ? err.message : String(err)),
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
    this.full = [];
    this.open = new EncodedSpans();
    this.queued = 0;
  }
}
