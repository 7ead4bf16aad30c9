/**
 * Encodes ended spans as an OTLP ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1) in
 * the protobuf wire format, written straight into growing buffers: no intermediate message objects. Each
 * span is encoded when it ends, into the batch it will be exported with (SpanBatch).
 * A nested message is written after room for its tag and a guessed length size; its end fills them in,
 * moving the body only when the guess was wrong, so each span is encoded in one pass over its fields.
 */
import type { Attributes, AttributeValue, Link } from "@opentelemetry/api";
import type { RecordingSpan, SpanEvent } from "./recording-tracer.js";
import { attributeKey, type AttributeKey, type RecurringValue } from "./span-attribute-keys.js";

/** The resource and scope every span of a request is exported under. */
export interface ExportIdentity {
  /** Resource attributes (service.name, service.version, ...). */
  resource: Attributes;
  scopeName: string;
  scopeVersion: string;
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LDELIM = 2;
const WIRE_FIXED32 = 5;

const TWO_POW_21 = 0x200000;
const TWO_POW_32 = 0x100000000;

/** A protobuf writer over one growing buffer. */
class Writer {
  buf: Buffer;
  pos = 0;

  constructor(buf: Buffer, pos = 0) {
    this.buf = buf;
    this.pos = pos;
  }

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  varint(value: number): void {
    this.room(10);
    this.pos = writeVarint(this.buf, this.pos, value);
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  /** An int64 field's value (two's complement for a negative one: ten bytes). */
  int64(value: number): void {
    if (value >= 0) {
      this.varint(value);
      return;
    }
    this.room(10);
    let big = BigInt.asUintN(64, BigInt(value));
    for (let i = 0; i < 9; i++) {
      this.buf[this.pos++] = Number(big & 0x7fn) | 0x80;
      big >>= 7n;
    }
    this.buf[this.pos++] = Number(big);
  }

  /**
   * Milliseconds since the epoch (with a fraction) as fixed64 nanoseconds. Nanoseconds pass 2^53, so the
   * product is built from parts a double holds exactly: whole ms = highMs * 2^21 + lowMs. Remainders are
   * taken by subtraction: `%` on doubles is a call into C, three of them per timestamp.
   */
  fixed64Nanos(ms: number): void {
    this.room(8);
    const whole = Math.floor(ms);
    // Dividing by a power of two is exact, so each floor below is the exact quotient.
    const highMs = Math.floor(whole / TWO_POW_21);
    const high = highMs * 1_000_000;
    const low = (whole - highMs * TWO_POW_21) * 1_000_000 + Math.round((ms - whole) * 1e6);
    // nanoseconds = high * 2^21 + low = highTop * 2^32 + lowSum
    const highTop = Math.floor(high / 2048);
    const lowSum = (high - highTop * 2048) * TWO_POW_21 + low;
    const carry = Math.floor(lowSum / TWO_POW_32);
    this.word(lowSum - carry * TWO_POW_32, false);
    this.word(highTop + carry, false);
  }

  /** A 32-bit word, little- or big-endian, byte by byte: Buffer's writeUInt32 checks its arguments each call. */
  private word(value: number, bigEndian: boolean): void {
    const buf = this.buf;
    const at = this.pos;
    const v = value >>> 0;
    if (bigEndian) {
      buf[at] = v >>> 24;
      buf[at + 1] = (v >>> 16) & 0xff;
      buf[at + 2] = (v >>> 8) & 0xff;
      buf[at + 3] = v & 0xff;
    } else {
      buf[at] = v & 0xff;
      buf[at + 1] = (v >>> 8) & 0xff;
      buf[at + 2] = (v >>> 16) & 0xff;
      buf[at + 3] = v >>> 24;
    }
    this.pos = at + 4;
  }

  fixed32(value: number): void {
    this.room(4);
    this.word(value, false);
  }

  double(value: number): void {
    this.room(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  string(field: number, value: string): void {
    this.tag(field, WIRE_LDELIM);
    const n = value.length;
    // Short ASCII text (attribute keys, names, ids, models) takes one length byte and a copy by hand.
    if (n < 128) {
      this.room(n + 1);
      const end = copyAscii(this.buf, this.pos + 1, value);
      if (end !== -1) {
        this.buf[this.pos] = n;
        this.pos = end;
        return;
      }
    }
    const length = Buffer.byteLength(value);
    this.varint(length);
    this.room(length);
    this.pos += this.buf.write(value, this.pos, length, "utf8");
  }

  /** A bytes field of a span id: two 32-bit words, high first. */
  spanId(field: number, high: number, low: number): void {
    this.tag(field, WIRE_LDELIM);
    this.room(9);
    this.buf[this.pos++] = 8;
    this.word(high, true);
    this.word(low, true);
  }

  /** A bytes field of a trace id: four 32-bit words, high first. */
  traceId(field: number, trace: { w0: number; w1: number; w2: number; w3: number }): void {
    this.tag(field, WIRE_LDELIM);
    this.room(17);
    this.buf[this.pos++] = 16;
    this.word(trace.w0, true);
    this.word(trace.w1, true);
    this.word(trace.w2, true);
    this.word(trace.w3, true);
  }

  /**
   * A KeyValue under `field` whose key is short ASCII text and whose value is short ASCII text, a
   * non-negative integer, a boolean or a list of one short ASCII text. A pair the key had before is copied
   * whole; a new one is written in one pass with its lengths known up front (every length one byte) and
   * offered to the key to remember. Returns false, having written nothing, for anything else: the general
   * path (open and close) takes those.
   */
  shortAttribute(field: number, key: AttributeKey, value: AttributeValue): boolean {
    const keyField = key.field;
    if (field > 15 || keyField === undefined) return false;
    const list = typeof value === "object";
    // A list takes this path only as one text, remembered by that text.
    if (list && (value.length !== 1 || typeof value[0] !== "string")) return false;
    const one = (list ? value[0] : value) as RecurringValue;
    const known = key.encoded(one, list);
    const length = known !== undefined ? known.length : shortAttributeLength(keyField, one, list);
    if (length === -1) return false;
    this.room(length + 2);
    const buf = this.buf;
    const start = this.pos + 2;
    if (known !== undefined) buf.set(known, start);
    else if (writeShortAttribute(buf, start, keyField, one, list) === -1) return false;
    buf[start - 2] = (field << 3) | WIRE_LDELIM;
    buf[start - 1] = length;
    this.pos = start + length;
    if (known === undefined) key.remember(one, list, buf.subarray(start, this.pos));
    return true;
  }

  /** A bytes field from a hex id (a link's trace and span ids, which the API hands over as hex). */
  hexBytes(field: number, hex: string): void {
    const length = hex.length >> 1;
    this.tag(field, WIRE_LDELIM);
    this.varint(length);
    this.room(length);
    this.pos += this.buf.write(hex, this.pos, length, "hex");
  }

  /**
   * Starts a nested message under `field`, leaving room for its tag and a length of `lengthBytes`
   * bytes (1 below 128 bytes, 2 below 16 KiB); `close` fills them in, moving the body only when the
   * length turned out to need another size.
   */
  open(field: number, lengthBytes: number): number {
    const header = varintSize((field << 3) | WIRE_LDELIM) + lengthBytes;
    this.room(header);
    this.pos += header;
    return this.pos;
  }

  /** Ends the message begun at `start` (what `open` returned) with its tag and length. */
  close(field: number, start: number, lengthBytes: number): void {
    const length = this.pos - start;
    const tagBytes = varintSize((field << 3) | WIRE_LDELIM);
    const reserved = tagBytes + lengthBytes;
    const header = tagBytes + varintSize(length);
    let bodyStart = start;
    if (header !== reserved) {
      this.room(header - reserved);
      this.buf.copyWithin(start - reserved + header, start, this.pos);
      bodyStart = start - reserved + header;
    }
    const end = bodyStart + length;
    this.pos = bodyStart - header;
    this.tag(field, WIRE_LDELIM);
    this.varint(length);
    this.pos = end;
  }

  /** Copies `length` bytes of `source` in as they are (spans another writer encoded). */
  raw(source: Buffer, length: number): void {
    this.room(length);
    source.copy(this.buf, this.pos, 0, length);
    this.pos += length;
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/**
 * The length of a KeyValue's body (its key field, then its AnyValue) when it fits a one-byte length; -1
 * otherwise. With `list`, the value is a list of the one text `value`.
 */
function shortAttributeLength(keyField: Uint8Array, value: RecurringValue, list: boolean): number {
  let valueLength: number;
  // AnyValue { array_value { values: AnyValue { string_value } } }: three more tags and lengths.
  if (list) valueLength = 6 + (value as string).length;
  else if (typeof value === "string") valueLength = 2 + value.length;
  else if (typeof value === "number") {
    if (value < 0 || !Number.isSafeInteger(value)) return -1;
    valueLength = 1 + varintSize(value);
  } else valueLength = 2;
  const length = keyField.length + 2 + valueLength;
  return length > 0x7f ? -1 : length;
}

/**
 * Writes a short KeyValue's body (shortAttributeLength says it fits) into `buf` from `at`; returns where it
 * ended, or -1 when the text is not ASCII.
 */
function writeShortAttribute(buf: Uint8Array, at: number, keyField: Uint8Array, value: RecurringValue, list: boolean): number {
  buf.set(keyField, at);
  at += keyField.length;
  buf[at++] = (2 << 3) | WIRE_LDELIM;
  if (list) {
    const text = value as string;
    buf[at++] = 6 + text.length;
    buf[at++] = (5 << 3) | WIRE_LDELIM;
    buf[at++] = 4 + text.length;
    buf[at++] = (1 << 3) | WIRE_LDELIM;
    buf[at++] = 2 + text.length;
    buf[at++] = (1 << 3) | WIRE_LDELIM;
    buf[at++] = text.length;
    return copyAscii(buf, at, text);
  }
  if (typeof value === "string") {
    buf[at++] = 2 + value.length;
    buf[at++] = (1 << 3) | WIRE_LDELIM;
    buf[at++] = value.length;
    return copyAscii(buf, at, value);
  }
  if (typeof value === "boolean") {
    buf[at++] = 2;
    buf[at++] = (2 << 3) | WIRE_VARINT;
    buf[at++] = value ? 1 : 0;
    return at;
  }
  buf[at++] = 1 + varintSize(value);
  buf[at++] = (3 << 3) | WIRE_VARINT;
  return writeVarint(buf, at, value);
}

/** Writes `value` as a varint into `buf` from `at` (room for it known); returns where it ended. */
function writeVarint(buf: Uint8Array, at: number, value: number): number {
  // Values here are lengths, counts, enums, tags and short attributes' integers: non-negative and below 2^53.
  while (value > 0x7f) {
    buf[at++] = (value & 0x7f) | 0x80;
    value = Math.floor(value / 128);
  }
  buf[at++] = value;
  return at;
}

/**
 * Copies ASCII `text` into `buf` from `at`, by hand (Buffer.write's argument handling costs more than the
 * copy for short text); returns where the copy ended, or -1 at the first non-ASCII character.
 */
function copyAscii(buf: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return -1;
    buf[at++] = c;
  }
  return at;
}

function varintSize(value: number): number {
  let size = 1;
  while (value > 0x7f) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** AnyValue: a string, bool, int64, double or array of those. */
function writeAnyValue(w: Writer, field: number, value: AttributeValue): void {
  const start = w.open(field, 1);
  if (typeof value === "string") w.string(1, value);
  else if (typeof value === "boolean") {
    w.tag(2, WIRE_VARINT);
    w.varint(value ? 1 : 0);
  } else if (typeof value === "number") {
    if (Number.isSafeInteger(value)) {
      w.tag(3, WIRE_VARINT);
      w.int64(value);
    } else {
      w.tag(4, WIRE_FIXED64);
      w.double(value);
    }
  } else if (Array.isArray(value)) {
    const array = w.open(5, 1);
    for (const item of value) {
      // A null or undefined entry of a list is kept as an empty AnyValue, so positions hold.
      if (item === null || item === undefined) {
        w.tag(1, WIRE_LDELIM);
        w.varint(0);
      } else writeAnyValue(w, 1, item);
    }
    w.close(5, array, 1);
  }
  w.close(field, start, 1);
}

/** A KeyValue attribute under `field`. */
function writeAttribute(w: Writer, field: number, key: AttributeKey, value: AttributeValue): void {
  if (w.shortAttribute(field, key, value)) return;
  const start = w.open(field, 1);
  w.string(1, key.name);
  writeAnyValue(w, 2, value);
  w.close(field, start, 1);
}

/** Repeated KeyValue attributes under `field`, from an object (an event's, a link's, the resource's). */
function writeAttributes(w: Writer, field: number, attributes: Attributes | undefined): void {
  if (attributes === undefined) return;
  for (const name in attributes) {
    const value = attributes[name];
    if (value !== undefined && value !== null) writeAttribute(w, field, attributeKey(name), value);
  }
}

function writeEvent(w: Writer, event: SpanEvent): void {
  const start = w.open(11, 1);
  w.tag(1, WIRE_FIXED64);
  w.fixed64Nanos(event.timeMs);
  w.string(2, event.name);
  writeAttributes(w, 3, event.attributes);
  w.close(11, start, 1);
}

function writeLink(w: Writer, link: Link): void {
  const start = w.open(13, 1);
  w.hexBytes(1, link.context.traceId);
  w.hexBytes(2, link.context.spanId);
  const state = link.context.traceState?.serialize();
  if (state) w.string(3, state);
  writeAttributes(w, 4, link.attributes);
  w.close(13, start, 1);
}

function writeSpan(w: Writer, span: RecordingSpan): void {
  const start = w.open(2, 2);
  const trace = span.trace;
  w.traceId(1, trace);
  w.spanId(2, span.idHigh, span.idLow);
  const state = trace.state?.serialize();
  if (state) w.string(3, state);
  if (span.hasParent) w.spanId(4, span.parentHigh, span.parentLow);
  w.string(5, span.name);
  // The API numbers kinds from INTERNAL = 0; OTLP keeps 0 for "unspecified".
  w.tag(6, WIRE_VARINT);
  w.varint(span.kind + 1);
  w.tag(7, WIRE_FIXED64);
  w.fixed64Nanos(span.startMs);
  w.tag(8, WIRE_FIXED64);
  w.fixed64Nanos(span.endMs);
  const keys = span.attributeKeys;
  const values = span.attributeValues;
  for (let i = 0; i < keys.length; i++) writeAttribute(w, 9, keys[i] as AttributeKey, values[i] as AttributeValue);
  if (span.droppedAttributes > 0) {
    w.tag(10, WIRE_VARINT);
    w.varint(span.droppedAttributes);
  }
  if (span.events !== undefined) for (const event of span.events) writeEvent(w, event);
  if (span.droppedEvents > 0) {
    w.tag(12, WIRE_VARINT);
    w.varint(span.droppedEvents);
  }
  if (span.links !== undefined) for (const link of span.links) writeLink(w, link);
  if (span.status.code !== 0) {
    const status = w.open(15, 1);
    if (span.status.message) w.string(2, span.status.message);
    w.tag(3, WIRE_VARINT);
    w.varint(span.status.code);
    w.close(15, status, 1);
  }
  // flags: the W3C trace flags (sampled) in the low byte.
  w.tag(16, WIRE_FIXED32);
  w.fixed32(1);
  w.close(2, start, 2);
}

/** Where a batch's encoding starts: a few spans' worth; the writer doubles as spans are added. */
const BATCH_START_BYTES = 16 * 1024;

/**
 * Room left before a batch's spans for the export request's envelope (resource, scope and the two lengths
 * around the spans), so the request is the batch's own bytes rather than a copy of them.
 */
const ENVELOPE_ROOM = 512;

/**
 * Spans encoded as they end, as the `spans` field of one ScopeSpans: a batch waiting for its export holds
 * bytes outside the JavaScript heap rather than span objects, which under load lived long enough for the
 * garbage collector to copy and promote them. A batch may encode into the buffer of one the collector has
 * taken: each new buffer is external memory to V8, and their churn under load set off full collections.
 */
export class SpanBatch {
  private readonly writer: Writer;
  /** Spans in the batch. */
  count = 0;

  /** A batch encoding into `buffer` (its old content ignored), or into a new one. */
  constructor(buffer?: Buffer) {
    const buf = buffer !== undefined && buffer.length > ENVELOPE_ROOM ? buffer : Buffer.allocUnsafe(BATCH_START_BYTES);
    this.writer = new Writer(buf, ENVELOPE_ROOM);
  }

  /** The buffer the batch encodes into (grown as needed); another batch may reuse it once this one's request is sent. */
  get buffer(): Buffer {
    return this.writer.buf;
  }

  /** Encodes an ended span into the batch; a span that cannot be encoded leaves the batch as it was, and throws. */
  add(span: RecordingSpan): void {
    const at = this.writer.pos;
    try {
      writeSpan(this.writer, span);
    } catch (err) {
      this.writer.pos = at;
      throw err;
    }
    this.count++;
  }

  /**
   * The ExportTraceServiceRequest of the batch's spans, all under one resource and one instrumentation
   * scope: a view of the batch's buffer, valid until the buffer is reused.
   */
  request(identity: ExportIdentity): Buffer {
    const spans = this.writer;
    const spansLength = spans.pos - ENVELOPE_ROOM;
    const resource = new Writer(Buffer.allocUnsafe(256));
    const resourceStart = resource.open(1, 2);
    writeAttributes(resource, 1, identity.resource);
    resource.close(1, resourceStart, 2);
    const scope = new Writer(Buffer.allocUnsafe(128));
    const scopeStart = scope.open(1, 1);
    scope.string(1, identity.scopeName);
    scope.string(2, identity.scopeVersion);
    scope.close(1, scopeStart, 1);
    const scopeSpansLength = scope.pos + spansLength;
    // The ScopeSpans field's tag is one byte.
    const resourceSpansLength = resource.pos + 1 + varintSize(scopeSpansLength) + scopeSpansLength;
    const head = new Writer(Buffer.allocUnsafe(64 + resource.pos + scope.pos));
    head.tag(1, WIRE_LDELIM);
    head.varint(resourceSpansLength);
    head.raw(resource.buf, resource.pos);
    head.tag(2, WIRE_LDELIM);
    head.varint(scopeSpansLength);
    head.raw(scope.buf, scope.pos);
    if (head.pos <= ENVELOPE_ROOM) {
      const start = ENVELOPE_ROOM - head.pos;
      head.buf.copy(spans.buf, start, 0, head.pos);
      return spans.buf.subarray(start, spans.pos);
    }
    // Resource attributes too many for the room: the request is a copy.
    const whole = Buffer.allocUnsafe(head.pos + spansLength);
    head.buf.copy(whole, 0, 0, head.pos);
    spans.buf.copy(whole, head.pos, ENVELOPE_ROOM, spans.pos);
    return whole;
  }
}

/** The ExportTraceServiceRequest of `spans`, all under one resource and one instrumentation scope. */
export function encodeExportRequest(identity: ExportIdentity, spans: readonly RecordingSpan[]): Buffer {
  const batch = new SpanBatch();
  for (const span of spans) batch.add(span);
  return batch.request(identity);
}
