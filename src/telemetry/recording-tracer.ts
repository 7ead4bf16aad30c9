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
import { attributeKey, type AttributeKey } from "./span-attribute-keys.js";

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

/**
 * What a sampler decides for a span that starts a trace or continues a caller's: `traceLow` is the trace
 * id's last 32 bits, `parent` the caller's span context when there is one.
 */
export type Sampler = (traceLow: number, parent: SpanContext | undefined) => boolean;

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

/** A random 32-bit word. */
function randomWord(): number {
  return (Math.random() * 0x100000000) >>> 0;
}

/** A new span id's high word, given its low one: never both zero, which is invalid. */
function spanIdHigh(low: number): number {
  const high = randomWord();
  return high === 0 && low === 0 ? 1 : high;
}

/** The ASCII codes of the hex digits. */
const HEX_DIGIT_CODES = Buffer.from("0123456789abcdef", "latin1");

/**
 * Where an id's text is put together before it becomes one string: ids are written as text per request (a
 * traceparent per upstream attempt, a log line's ids), and joining two-digit pieces made a string per piece
 * and a tree of them that every later reader (a header's validation, a log line's escaping) flattened again.
 * Used only synchronously, from one thread.
 */
const ID_TEXT = Buffer.allocUnsafeSlow(64);

/** Puts a 32-bit word's eight hex digits into ID_TEXT at `at`; returns where they end. */
function putWordHex(at: number, word: number): number {
  for (let shift = 28; shift >= 0; shift -= 4) ID_TEXT[at++] = HEX_DIGIT_CODES[(word >>> shift) & 0xf] as number;
  return at;
}

/** Puts a trace id's 32 hex digits into ID_TEXT at `at`; returns where they end. */
function putTraceHex(at: number, trace: { w0: number; w1: number; w2: number; w3: number }): number {
  return putWordHex(putWordHex(putWordHex(putWordHex(at, trace.w0), trace.w1), trace.w2), trace.w3);
}

/** ID_TEXT up to `end`, as one string. */
function idText(end: number): string {
  return ID_TEXT.toString("latin1", 0, end);
}

/** A span id's 16 hex digits, from its high and low words. */
function spanIdText(high: number, low: number): string {
  return idText(putWordHex(putWordHex(0, high), low));
}

/** The four 32-bit words of eight hex digits each, from a validated 32-digit trace id. */
function hexWords(hex: string, at: number): number {
  return Number.parseInt(hex.slice(at, at + 8), 16) >>> 0;
}

/**
 * A trace id, shared by the spans of one trace, as four 32-bit words (high first): ids are made and
 * encoded as numbers, and written as hex only when a traceparent or a log line asks for them.
 */
export class TraceIdentity {
  private text: string | undefined;

  constructor(
    readonly w0: number,
    readonly w1: number,
    readonly w2: number,
    readonly w3: number,
    readonly state: TraceState | undefined,
  ) {}

  /** A new random trace id (never all zeros, which is invalid). */
  static random(): TraceIdentity {
    const identity = new TraceIdentity(randomWord(), randomWord(), randomWord(), randomWord(), undefined);
    return identity.w0 === 0 && identity.w1 === 0 && identity.w2 === 0 && identity.w3 === 0 ? TraceIdentity.random() : identity;
  }

  /** The id of a caller's validated span context. */
  static of(context: SpanContext): TraceIdentity {
    const hex = context.traceId;
    return new TraceIdentity(hexWords(hex, 0), hexWords(hex, 8), hexWords(hex, 16), hexWords(hex, 24), context.traceState);
  }

  get hex(): string {
    this.text ??= idText(putTraceHex(0, this));
    return this.text;
  }
}

/** The status of a span nobody set one on: one object for all of them, never changed (setStatus replaces it). */
const UNSET: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });

/** A recorded span: what the OTLP encoder reads once it has ended. */
export class RecordingSpan implements Span {
  /** The attributes' keys in the order first set; `attributeValues` holds each one's value at the same index. */
  readonly attributeKeys: AttributeKey[] = [];
  readonly attributeValues: AttributeValue[] = [];
  droppedAttributes = 0;
  events: SpanEvent[] | undefined;
  droppedEvents = 0;
  links: Link[] | undefined;
  status: SpanStatus = UNSET;
  endMs = 0;
  private ended = false;
  private context: SpanContext | undefined;
  private idText: string | undefined;

  constructor(
    private readonly sink: SpanSink,
    readonly trace: TraceIdentity,
    /** The span id's high and low 32 bits. */
    readonly idHigh: number,
    readonly idLow: number,
    /** The parent span's id words; `hasParent` false for a root span. */
    readonly hasParent: boolean,
    readonly parentHigh: number,
    readonly parentLow: number,
    public name: string,
    readonly kind: SpanKind,
    readonly startMs: number,
    attributes: Attributes | undefined,
  ) {
    if (attributes !== undefined) this.setAttributes(attributes);
  }

  /** The span id as 16 hex digits. */
  get spanIdHex(): string {
    this.idText ??= spanIdText(this.idHigh, this.idLow);
    return this.idText;
  }

  /** The W3C traceparent of this (sampled) span, without building its SpanContext. */
  traceparent(): string {
    // "00-<trace id>-<span id>-01", put together in one go.
    ID_TEXT[0] = ID_TEXT[1] = 0x30;
    ID_TEXT[2] = 0x2d;
    let at = putTraceHex(3, this.trace);
    ID_TEXT[at++] = 0x2d;
    at = putWordHex(putWordHex(at, this.idHigh), this.idLow);
    ID_TEXT[at++] = 0x2d;
    ID_TEXT[at++] = 0x30;
    ID_TEXT[at++] = 0x31;
    return idText(at);
  }

  spanContext(): SpanContext {
    this.context ??= { traceId: this.trace.hex, spanId: this.spanIdHex, traceFlags: TraceFlags.SAMPLED, ...(this.trace.state ? { traceState: this.trace.state } : {}) };
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue): this {
    return this.set(attributeKey(key), value);
  }

  /** Sets an attribute by its key object: what the gateway's own tracing code calls, with keys it holds. */
  set(key: AttributeKey, value: AttributeValue): this {
    if (this.ended || value === undefined || value === null) return this;
    const keys = this.attributeKeys;
    // A span has a dozen attributes at most in the gateway's own use: a scan beats a map of its own.
    for (let i = 0; i < keys.length; i++) {
      const held = keys[i] as AttributeKey;
      // A name is interned for good or never, so an interned key's identity decides.
      if (held === key || (!key.interned && held.name === key.name)) {
        this.attributeValues[i] = value;
        return this;
      }
    }
    if (keys.length >= MAX_ATTRIBUTES) {
      this.droppedAttributes++;
      return this;
    }
    keys.push(key);
    this.attributeValues.push(value);
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

/** Which trace a new span joins, its caller's remote parent if any, and the sampler's answer. */
interface Decision {
  sampled: boolean;
  identity: TraceIdentity;
  remote: SpanContext | undefined;
}

/** Starts spans: what TraceNode needs of a tracer. */
export interface SpanStarter {
  /** A span under the span in `context` (a caller's remote one for a request), or a new trace. */
  startSpan(name: string, options: SpanOptions, context: Context): Span;
  /** A span under a recording `parent` (so recorded too: its trace is sampled), without building a context for it. */
  startChild(name: string, kind: SpanKind, parent: RecordingSpan): RecordingSpan;
  /**
   * A span under the span in `context`, or undefined when the sampler drops it: `describe` names the span
   * and gives its options only once it is kept, so a dropped request builds neither.
   */
  startSampled(context: Context, describe: () => { name: string; options: SpanOptions }): RecordingSpan | undefined;
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

  startChild(name: string, kind: SpanKind, parent: RecordingSpan): RecordingSpan {
    const idLow = randomWord();
    return new RecordingSpan(this.sink, parent.trace, spanIdHigh(idLow), idLow, true, parent.idHigh, parent.idLow, name, kind, nowMs(), undefined);
  }

  startSampled(context: Context, describe: () => { name: string; options: SpanOptions }): RecordingSpan | undefined {
    const parentSpan = trace.getSpan(context);
    const decided = this.decide(parentSpan);
    if (!decided.sampled) return undefined;
    const { name, options } = describe();
    return this.startDecided(decided, parentSpan, name, options);
  }

  private startUnder(name: string, options: SpanOptions, parentSpan: Span | undefined): Span {
    const decided = this.decide(parentSpan);
    if (decided.sampled) return this.startDecided(decided, parentSpan, name, options);
    const { identity } = decided;
    // The API's non-recording span carries the ids, so that traceparent still propagates; `|| 1`: an
    // all-zero span id is invalid.
    return trace.wrapSpanContext({ traceId: identity.hex, spanId: spanIdText(randomWord() || 1, randomWord()), traceFlags: TraceFlags.NONE, ...(identity.state ? { traceState: identity.state } : {}) });
  }

  /** The trace a new span under `parentSpan` belongs to, and whether the sampler keeps it. */
  private decide(parentSpan: Span | undefined): Decision {
    // A recording span of this tracer is a valid, sampled parent: only a caller's remote context is checked.
    if (parentSpan instanceof RecordingSpan) return { sampled: true, identity: parentSpan.trace, remote: undefined };
    const parent = parentSpan?.spanContext();
    const remote = parent !== undefined && trace.isSpanContextValid(parent) ? parent : undefined;
    const identity = remote === undefined ? TraceIdentity.random() : TraceIdentity.of(remote);
    return { sampled: this.sampler(identity.w3, remote), identity, remote };
  }

  private startDecided(decided: Decision, parentSpan: Span | undefined, name: string, options: SpanOptions): RecordingSpan {
    const kind = options.kind ?? SpanKind.INTERNAL;
    const idLow = randomWord();
    const idHigh = spanIdHigh(idLow);
    const { identity, remote } = decided;
    if (parentSpan instanceof RecordingSpan) return this.recording(identity, idHigh, idLow, true, parentSpan.idHigh, parentSpan.idLow, name, kind, options);
    if (remote === undefined) return this.recording(identity, idHigh, idLow, false, 0, 0, name, kind, options);
    return this.recording(identity, idHigh, idLow, true, hexWords(remote.spanId, 0), hexWords(remote.spanId, 8), name, kind, options);
  }

  private recording(identity: TraceIdentity, idHigh: number, idLow: number, hasParent: boolean, parentHigh: number, parentLow: number, name: string, kind: SpanKind, options: SpanOptions): RecordingSpan {
    const span = new RecordingSpan(this.sink, identity, idHigh, idLow, hasParent, parentHigh, parentLow, name, kind, timeMs(options.startTime), options.attributes);
    if (options.links !== undefined) span.addLinks(options.links);
    return span;
  }
}

/** The standard OTEL_TRACES_SAMPLER names. */
export const SAMPLER_NAMES = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;
export type SamplerName = (typeof SAMPLER_NAMES)[number];

/**
 * Whether a trace id falls under `ratio`: decided by the id's last 32 bits, so every span of a trace, on
 * every node that uses the same rule, gets the same answer.
 */
function underRatio(traceLow: number, ratio: number): boolean {
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  return traceLow < ratio * 0x100000000;
}

/** The sampler a standard name and ratio stand for; parent-based ones follow a sampled parent's flag. */
export function samplerFor(name: SamplerName, ratio: number): Sampler {
  const root: Sampler =
    name === "always_on" || name === "parentbased_always_on"
      ? () => true
      : name === "always_off" || name === "parentbased_always_off"
        ? () => false
        : (traceLow) => underRatio(traceLow, ratio);
  if (!name.startsWith("parentbased_")) return root;
  return (traceLow, parent) => (parent === undefined ? root(traceLow, undefined) : (parent.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED);
}
