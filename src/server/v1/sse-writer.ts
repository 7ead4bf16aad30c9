/**
 * Writes a server-sent event stream to a response, joining the events that arrive in one turn of the
 * event loop into one write. An upstream's network read usually holds many events, and each write of a
 * chunked HTTP/1.1 response costs four socket writes of its own (size, CRLF, data, CRLF) and a chunk
 * header on the wire: per event, that was most of what a streamed answer cost the gateway beyond the
 * upstream's own bytes. Events are held until the event loop has run the callbacks of the network reads
 * at hand (a setImmediate), so none waits for a later read, and a stream whose end arrived in the same
 * read goes out with its end in one write where a flush at the end of the turn took two.
 */
import type { Writable } from "node:stream";
import type { Res } from "../node-http.js";

/** Past this many held characters and bytes the events go out at once rather than at the end of the turn. */
const HOLD_LIMIT = 64 * 1024;

/** True once the response can take nothing more: the client left or it was ended. */
export function gone(res: Res): boolean {
  return res.destroyed || res.writableEnded;
}

/** Resolves once the response can take more data, or the client is gone. */
export function drained(res: Res): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

function flushWriter(writer: SseWriter): void {
  writer.flush();
}

/** One stream's writer; the response's headers must already be written. */
export class SseWriter {
  /** What is held, in order: event text, and upstream reads passed on as the bytes they arrived as. */
  private readonly held: (string | Uint8Array)[] = [];
  private heldLength = 0;
  private scheduled = false;
  /** Set when a write found the response's buffer full: the caller waits for it before reading on. */
  private full: Promise<void> | null = null;
  // Both response classes are Writables; the union of their write() overloads is not callable as such.
  private readonly out: Writable;

  constructor(private readonly res: Res) {
    this.out = res;
  }

  /** Queues `events` (SSE text, or bytes that are SSE text in UTF-8) to go out once this loop iteration's reads are handled (at once past HOLD_LIMIT). */
  write(events: string | Uint8Array): void {
    this.held.push(events);
    this.heldLength += events.length;
    if (this.heldLength >= HOLD_LIMIT) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(flushWriter, this);
    }
  }

  /** Writes what is held now. */
  flush(): void {
    this.scheduled = false;
    if (this.held.length === 0) return;
    const events = this.take();
    if (gone(this.res)) return;
    // The drain listener is added now, in the same turn as the refused write, so its drain cannot be missed.
    if (!this.out.write(events)) this.full = drained(this.res);
  }

  /** Resolves once the response has room for more (at once when it has). */
  room(): Promise<void> | null {
    const full = this.full;
    this.full = null;
    return full;
  }

  /** Ends the response with what is held and then `text`. */
  end(text: string): void {
    this.held.push(text);
    const events = this.take();
    if (!gone(this.res)) this.res.end(events);
  }

  /** What is held as one piece to write, and nothing held after. */
  private take(): string | Uint8Array {
    const held = this.held;
    const events = held.length === 1 ? (held[0] as string | Uint8Array) : joined(held);
    held.length = 0;
    this.heldLength = 0;
    return events;
  }
}

/** Several pieces as one: text joined when all are text, otherwise bytes. */
function joined(pieces: readonly (string | Uint8Array)[]): string | Uint8Array {
  if (pieces.every((piece) => typeof piece === "string")) return pieces.join("");
  return Buffer.concat(pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece)));
}
