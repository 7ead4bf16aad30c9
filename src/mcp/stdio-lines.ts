/**
 * A stdio MCP server's output cut into lines, one JSON-RPC message each, with a bound on one line. A line
 * is gathered as the pipe's chunks and joined once at its newline (never re-joined chunk by chunk). A line
 * that passes the bound is not kept: only its first and last bytes are, until its newline, so the pipe goes
 * on with the next message and the caller can still tell which request the dropped one answered.
 */
import { MessagePieces } from "./message-pieces.js";

const LF = 10;
const CR = 13;

/** What a LineReader hands on. */
export interface LineSink {
  /** A whole line within the bound, without its line end. */
  line(text: string): void;
  /** A line over the bound has ended: its first and last bytes (at most KEPT_END_BYTES each, message-pieces.ts), as text. */
  oversized(head: string, tail: string): void;
}

/** Cuts a byte stream into lines of at most `maxBytes` bytes each (a trailing CR is not part of a line). */
export class LineReader {
  private readonly message: MessagePieces;

  constructor(
    maxBytes: number,
    private readonly sink: LineSink,
  ) {
    this.message = new MessagePieces(maxBytes);
  }

  /** Adds a chunk of the stream; hands on every line it ends. */
  push(chunk: Buffer): void {
    let from = 0;
    while (from <= chunk.length) {
      const newline = chunk.indexOf(LF, from);
      const end = newline === -1 ? chunk.length : newline;
      if (end > from) this.message.add(chunk.subarray(from, end));
      if (newline === -1) return;
      this.endLine();
      from = newline + 1;
    }
  }

  /** Forgets a line in progress (the stream closed). */
  clear(): void {
    this.message.clear();
  }

  private endLine(): void {
    const line = this.message.end();
    if (line.over) {
      this.sink.oversized(line.head.toString("utf8"), withoutCr(line.tail).toString("utf8"));
      return;
    }
    const bytes = line.pieces.length === 1 ? line.pieces[0]! : Buffer.concat(line.pieces, line.bytes);
    this.sink.line(withoutCr(bytes).toString("utf8"));
  }
}

/** A line without the CR of a CRLF line end. */
function withoutCr(line: Buffer): Buffer {
  return line.length > 0 && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
}
