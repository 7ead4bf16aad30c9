/**
 * An event stream let through one whole event at a time, with a bound on one event: the legacy SSE
 * transport's GET stream carries every answer, so an event over the bound must be skipped without ending the
 * stream. An event is held until its blank line and then passed on as the chunks it arrived in (no copy); one
 * that passes the bound is dropped, only its first and last bytes kept, until its blank line, and reported.
 */
import { endsEvent, nextEventEnd } from "./message-bound.js";
import { MessagePieces } from "./message-pieces.js";

const LF = 10;
const CR = 13;

/** What an EventGate hands on. */
export interface EventSink {
  /** Whole events within the bound, as the pieces of the stream that carry them. */
  events(pieces: readonly Buffer[]): void;
  /** An event over the bound has ended: its first data value's first bytes and the event's last bytes, as text. */
  oversized(head: string, tail: string): void;
}

/** Where an event's first `data:` field's value starts: a field at a line start, one optional space after its colon. */
const FIRST_DATA = /(?:^|[\r\n])data:( ?)/;

/** The value of the first data field in an event's first bytes ("" when they hold none). */
function firstDataValue(head: string): string {
  const found = FIRST_DATA.exec(head);
  return found === null ? "" : head.slice(found.index + found[0].length);
}

/** Passes an event stream's events on whole, each of at most `maxBytes` bytes. */
export class EventGate {
  private readonly event: MessagePieces;
  /** The last byte of the chunk before: a blank line may start in one chunk and end in the next. */
  private previous = 0;

  constructor(
    maxBytes: number,
    private readonly sink: EventSink,
  ) {
    this.event = new MessagePieces(maxBytes);
  }

  /** Adds a chunk of the stream; hands on the events it completes. */
  push(chunk: Buffer): void {
    const whole: Buffer[] = [];
    let from = 0;
    while (from < chunk.length) {
      let end = from === 0 && endsEvent(this.previous, chunk[0]!) ? 1 : nextEventEnd(chunk, from);
      // A blank line's CR LF goes with its event: a reader holds a CR that ends what it was given.
      if (end !== -1 && end < chunk.length && chunk[end - 1] === CR && chunk[end] === LF) end++;
      this.event.add(chunk.subarray(from, end === -1 ? chunk.length : end));
      if (end === -1) break;
      const event = this.event.end();
      if (event.over) this.sink.oversized(firstDataValue(event.head.toString("utf8")), event.tail.toString("utf8"));
      else whole.push(...event.pieces);
      from = end;
    }
    if (chunk.length > 0) this.previous = chunk[chunk.length - 1]!;
    if (whole.length > 0) this.sink.events(whole);
  }
}
