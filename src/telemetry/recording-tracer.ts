/**
 * The gateway's own tracer behind the OpenTelemetry API's Span interface: a span is a plain object that
 * keeps its attributes as set (no per-value validation copy, no hrtime conversions) and, once ended, is
 * handed to a sink as it is. The OpenTelemetry SDK's spans cost a traced request several times what the
 * whole tracing budget allows (attribute sanitising on every set, time conversions, span-limit checks,
 * the processor chain, then an intermediate object tree per span at export), so the gateway records
 * spans itself and encodes them straight to OTLP at export (otlp-protobuf.ts).
 */
import {
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes,
  type AttributeValue,
  type Context,
  type Exception,
  type Link,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type TimeInput,
  type TraceState,
} from "@opentelemetry/api";
import { randomFillSync } from "node:crypto";

/** Attributes a span keeps at most (the OpenTelemetry default); later ones are counted as dropped. */
export const MAX_ATTRIBUTES = 128;
/** Events a span keeps at most (the OpenTelemetry default). */
export const MAX_EVENTS = 128;

/** One event of a span: its name, time and attributes. */
export interface SpanEvent {
  name: string;
  /** Milliseconds since the epoch, with a fraction. */
  timeMs: number;
  attributes: Attributes | undefined;
}

/** What a sampler decides for a new root or child span. */
export type Sampler = (traceId: string, parent: SpanContext | undefined) => boolean;

/** Where ended spans go: the export queue. */
export type SpanSink = (span: RecordingSpan) => void;

// performance.now() is monotonic; anchoring it once at the epoch makes every timestamp one addition.
const EPOCH_ORIGIN_MS = performance.timeOrigin;

/** Now, in milliseconds since the epoch with a sub-millisecond fraction. */
function nowMs(): number {
  return EPOCH_ORIGIN_MS + performance.now();
}

/** A TimeInput as milliseconds since the epoch. */
function timeMs(input: TimeInput | undefined): number {
  if (input === undefined) return nowMs();
  if (typeof input === "number") return input < EPOCH_ORIGIN_MS / 2 ? EPOCH_ORIGIN_MS + input : input;
  if (input instanceof Date) return input.getTime();
  return input[0] * 1000 + input[1] / 1e6;
}

// Ids are cut from a pool of random bytes refilled in one call: a call per id costs more than the id.
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;
const ZERO_SPAN_ID = "0".repeat(16);
const ZERO_TRACE_ID = "0".repeat(32);

/** `bytes` random bytes as lowercase hex, never all zeros (an invalid id). */
function randomHex(bytes: number): string {
  if (poolAt + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const hex = pool.toString("hex", poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex === ZERO_SPAN_ID || hex === ZERO_TRACE_ID ? randomHex(bytes) : hex;
}

/** A recorded span: what the OTLP encoder reads once it has ended. */
export class RecordingSpan implements Span {
  readonly attributes: Attributes;
  attributeCount = 0;
  droppedAttributes = 0;
  events: SpanEvent[] | undefined;
  droppedEvents = 0;
  links: Link[] | undefined;
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  endMs = 0;
  private ended = false;
  private context: SpanContext | undefined;

  constructor(
    private readonly sink: SpanSink,
    readonly traceId: string,
    readonly spanId: string,
    /** "" for a root span. */
    readonly parentSpanId: string,
    readonly traceState: TraceState | undefined,
    public name: string,
    readonly kind: SpanKind,
    readonly startMs: number,
    attributes: Attributes | undefined,
  ) {
    this.attributes = {};
    if (attributes !== undefined) this.setAttributes(attributes);
  }

  spanContext(): SpanContext {
    this.context ??= { traceId: this.traceId, spanId: this.spanId, traceFlags: TraceFlags.SAMPLED, ...(this.traceState ? { traceState: this.traceState } : {}) };
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue): this {
    if (this.ended || value === undefined || value === null) return this;
    if (this.attributes[key] === undefined) {
      if (this.attributeCount >= MAX_ATTRIBUTES) {
        this.droppedAttributes++;
        return this;
      }
      this.attributeCount++;
    }
    this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) {
      const value = attributes[key];
      if (value !== undefined) this.setAttribute(key, value);
    }
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    const events = (this.events ??= []);
    if (events.length >= MAX_EVENTS) {
      this.droppedEvents++;
      return this;
    }
    const isTime = typeof attributesOrTime === "number" || attributesOrTime instanceof Date || Array.isArray(attributesOrTime);
    events.push({ name, timeMs: timeMs(isTime ? (attributesOrTime as TimeInput) : time), attributes: isTime ? undefined : (attributesOrTime as Attributes | undefined) });
    return this;
  }

  addLink(link: Link): this {
    if (!this.ended) (this.links ??= []).push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (!this.ended) this.status = status;
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.ended = true;
    this.endMs = Math.max(this.startMs, timeMs(endTime));
    this.sink(this);
  }

  isRecording(): boolean {
    return !this.ended;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === "string") attributes["exception.message"] = exception;
    else {
      if (exception.name !== undefined) attributes["exception.type"] = exception.name;
      if (exception.message !== undefined) attributes["exception.message"] = exception.message;
      if (exception.stack !== undefined) attributes["exception.stacktrace"] = exception.stack;
    }
    this.addEvent("exception", attributes, time);
  }
}

/** Starts spans: what TraceNode needs of a tracer. */
export interface SpanStarter {
  /** A span under the span in `context` (a caller's remote one for a request), or a new trace. */
  startSpan(name: string, options: SpanOptions, context: Context): Span;
  /** A span under `parent`, without building a context for it. */
  startChild(name: string, options: SpanOptions, parent: Span): Span;
}

/**
 * A tracer whose spans record into `sink`. A span continues the trace of the span in `context` (local or
 * a caller's remote one); the sampler decides for each new span, and an unsampled one is the API's
 * non-recording span carrying the ids, so its children stay unsampled and traceparent still propagates.
 */
export class RecordingTracer implements SpanStarter {
  constructor(
    private readonly sink: SpanSink,
    private readonly sampler: Sampler,
  ) {}

  startSpan(name: string, options: SpanOptions, context: Context): Span {
    return this.startUnder(name, options, trace.getSpan(context));
  }

  startChild(name: string, options: SpanOptions, parent: Span): Span {
    return this.startUnder(name, options, parent);
  }

  private startUnder(name: string, options: SpanOptions, parentSpan: Span | undefined): Span {
    // A recording span of this tracer is a valid, sampled parent: only a caller's remote context is checked.
    const local = parentSpan instanceof RecordingSpan;
    const parent = local ? undefined : parentSpan?.spanContext();
    const valid = local || (parent !== undefined && trace.isSpanContextValid(parent));
    const traceId = local ? parentSpan.traceId : valid && parent ? parent.traceId : randomHex(16);
    const spanId = randomHex(8);
    const traceState = local ? parentSpan.traceState : valid ? parent?.traceState : undefined;
    if (!local && !this.sampler(traceId, valid ? parent : undefined)) {
      return trace.wrapSpanContext({ traceId, spanId, traceFlags: TraceFlags.NONE, ...(traceState ? { traceState } : {}) });
    }
    const parentSpanId = local ? parentSpan.spanId : valid && parent ? parent.spanId : "";
    const span = new RecordingSpan(this.sink, traceId, spanId, parentSpanId, traceState, name, options.kind ?? SpanKind.INTERNAL, timeMs(options.startTime), options.attributes);
    if (options.links !== undefined) span.addLinks(options.links);
    return span;
  }
}

/** The standard OTEL_TRACES_SAMPLER names. */
export const SAMPLER_NAMES = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;
export type SamplerName = (typeof SAMPLER_NAMES)[number];

/**
 * Whether a trace id falls under `ratio`: decided by the id's last 8 hex digits, so every span of a
 * trace, on every node that uses the same rule, gets the same answer.
 */
function underRatio(traceId: string, ratio: number): boolean {
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  return Number.parseInt(traceId.slice(-8), 16) < ratio * 0x100000000;
}

/** The sampler a standard name and ratio stand for; parent-based ones follow a sampled parent's flag. */
export function samplerFor(name: SamplerName, ratio: number): Sampler {
  const root: Sampler =
    name === "always_on" || name === "parentbased_always_on"
      ? () => true
      : name === "always_off" || name === "parentbased_always_off"
        ? () => false
        : (traceId) => underRatio(traceId, ratio);
  if (!name.startsWith("parentbased_")) return root;
  return (traceId, parent) => (parent === undefined ? root(traceId, undefined) : (parent.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED);
}
