/** Server-sent events parsing (the WHATWG event-stream format) over a byte stream. */
import { StringDecoder } from "node:string_decoder";

/** One dispatched event: its `event:` name (default "message") and its joined `data:` lines. */
export interface SseEvent {
  event: string;
  data: string;
}

/** A bound on the bytes read: past `maxBytes` the parse fails with `error()`. */
export interface SseByteLimit {
  maxBytes: number;
  error: () => Error;
}

const LF = 10;

/**
 * The event-stream parser, fed one network chunk at a time and answering with the events that chunk
 * completes. Synchronous, so a stream that maps each event on its own (provider-stream.ts) iterates the
 * body alone: an async layer per event costs each event a promise and a turn of the microtask queue.
 * Lines are found with indexOf from a moving position and the consumed text is cut once per chunk, so a
 * chunk holding many events is scanned once; a trailing event without its blank line is never
 * dispatched, as the format says.
 *
 * It also remembers how many of a read's leading events arrived exactly as `data: <data>\n\n` from the read's
 * start (wireEvents), so a writer that frames events that way can send that text as it arrived (wireText)
 * instead of framing every event again, or the read's own bytes (wireBytes), which the writer then need not
 * encode again.
 */
export class SseParser {
  // StringDecoder, not TextDecoder: the same UTF-8 decoding of a stream split anywhere (a character cut
  // between reads waits for its rest), much faster on a read of chat chunks.
  private readonly decoder = new StringDecoder("utf8");
  /** No text decoded yet: a byte order mark at the start is dropped, as UTF-8 decoding does. */
  private first = true;
  private buffer = "";
  private event = "";
  /** The event's data: its one line, or (more) all of its lines; null before its first `data:` line. */
  private data: string | null = null;
  private more: string[] | null = null;
  private bytes = 0;
  /** The text the last push parsed, from its first character. */
  private text = "";
  /** Where each of the last push's leading `data: <data>\n\n` events ends in `text`; reused push after push. */
  private readonly wireEnds: number[] = [];
  /** The last push's bytes when its text began with them (nothing of an earlier read before it); null otherwise. */
  private read: Uint8Array | null = null;

  constructor(private readonly limit?: SseByteLimit) {}

  /** How many of the last push's events, from its first, arrived exactly as `data: <data>\n\n` one after another from the read's start. */
  get wireEvents(): number {
    return this.wireEnds.length;
  }

  /** The text the last push's first `count` events (1 to wireEvents) arrived as; a slice of the read's text, not a copy. */
  wireText(count: number): string {
    const end = this.wireEnd(count, "wireText");
    return end === this.text.length ? this.text : this.text.slice(0, end);
  }

  /**
   * The bytes the last push's first `count` events (1 to wireEvents) arrived as, a view of the pushed chunk;
   * undefined when the decoder replaced a byte of theirs (their text then differs from them) or a string
   * was pushed.
   */
  wireBytes(count: number): Uint8Array | undefined {
    const end = this.wireEnd(count, "wireBytes");
    const read = this.read;
    if (read === null) return undefined;
    const text = this.text;
    // Searching a one-byte string for U+FFFD fails at once.
    const replaced = text.indexOf("\ufffd");
    if (replaced !== -1 && replaced < end) return undefined;
    // A character takes at least as many bytes as UTF-16 units (a held-back part of one, none): the read as
    // long in bytes as in units is one byte a unit, and so is each part of it.
    const bytes = text.length === read.length ? end : Buffer.byteLength(end === text.length ? text : text.slice(0, end));
    return bytes === read.length ? read : read.subarray(0, bytes);
  }

  /** Where the last push's first `count` events end in its text; throws for a count it does not have. */
  private wireEnd(count: number, caller: string): number {
    const end = this.wireEnds[count - 1];
    if (end === undefined || count < 1) throw new RangeError(`${caller}(${count}): the last read began with ${this.wireEnds.length} such events`);
    return end;
  }

  /** The events `chunk` completes (often none or many); throws the limit's error past its bytes. */
  push(chunk: Uint8Array | string): SseEvent[] {
    const limit = this.limit;
    if (limit !== undefined) {
      this.bytes += chunk.length;
      if (this.bytes > limit.maxBytes) throw limit.error();
    }
    let text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    // The events arrive as written from the read's start only when nothing of an earlier read is pending. A
    // character cut at the end of the earlier read would be pending too: an event ends in a line break.
    let wire = this.buffer === "" && this.data === null && this.event === "";
    if (this.first && text !== "") {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) {
        text = text.slice(1);
        wire = false;
      }
    }
    this.read = wire && typeof chunk !== "string" ? chunk : null;
    const buffer = this.buffer + text;
    const wireEnds = this.wireEnds;
    wireEnds.length = 0;
    const events: SseEvent[] = [];
    let pos = 0;
    // Where the next \r is at or after pos (-1: none left), found again only once passed.
    let cr = buffer.indexOf("\r");
    for (;;) {
      if (cr !== -1 && cr < pos) cr = buffer.indexOf("\r", pos);
      const lf = buffer.indexOf("\n", pos);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A lone \r at the end may be the first half of \r\n: wait for more bytes before splitting on it.
        if (cr === buffer.length - 1) break;
        wire = false;
        end = cr;
        next = buffer.charCodeAt(cr + 1) === LF ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else break;
      // The line is buffer[start, end); its field and value are read in place, so a line costs one slice.
      const start = pos;
      pos = next;
      if (end === start) {
        if (this.data !== null) {
          if (wire && this.more === null && this.event === "") wireEnds.push(next);
          else wire = false;
          events.push({ event: this.event || "message", data: this.more === null ? this.data : this.more.join("\n") });
          this.data = null;
          this.more = null;
        } else wire = false;
        this.event = "";
        continue;
      }
      if (buffer.charCodeAt(start) === 58 /* ":" */) {
        wire = false;
        continue;
      }
      const colon = buffer.indexOf(":", start);
      const fieldEnd = colon === -1 || colon > end ? end : colon;
      let valueStart = fieldEnd === end ? end : fieldEnd + 1;
      if (buffer.charCodeAt(valueStart) === 32 /* " " */ && valueStart < end) valueStart++;
      const fieldLength = fieldEnd - start;
      if (fieldLength === 4 && buffer.startsWith("data", start)) {
        // Written again, the event would read `data: <value>`: one space after the colon, the value after it.
        if (this.data !== null || valueStart !== fieldEnd + 2) wire = false;
        this.addData(buffer.slice(valueStart, end));
      } else {
        wire = false;
        if (fieldLength === 5 && buffer.startsWith("event", start)) this.event = buffer.slice(valueStart, end);
      }
    }
    this.text = buffer;
    this.buffer = pos > 0 ? buffer.slice(pos) : buffer;
    return events;
  }

  /**
   * The events the body's end completes: a last line ended by a lone \r, which push() holds back as the
   * possible first half of \r\n, is a line end once no byte follows.
   */
  end(): SseEvent[] {
    return this.buffer.endsWith("\r") ? this.push("\n") : [];
  }

  private addData(value: string): void {
    if (this.data === null) this.data = value;
    else (this.more ??= [this.data]).push(value);
  }
}

/** Yields each event of an event stream (SseParser over the body); `limit` bounds the bytes read. */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>, limit?: SseByteLimit): AsyncGenerator<SseEvent> {
  const parser = new SseParser(limit);
  for await (const chunk of body) yield* parser.push(chunk);
  yield* parser.end();
}
