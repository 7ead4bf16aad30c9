/**
 * A stdio MCP server's output cut into lines, one JSON-RPC message each, with a bound on one line. A line
 * is gathered as the pipe's chunks and joined once at its newline (never re-joined chunk by chunk). A line
 * that passes the bound is not kept: only its first and last bytes are, until its newline, so the pipe goes
 * on with the next message and the caller can still tell which request the dropped one answered.
 */

/** Bytes kept of each end of a line over the bound: enough for the keys and id around its large value. */
export const KEPT_END_BYTES = 1024;

const LF = 10;
const CR = 13;

/** What a LineReader hands on. */
export interface LineSink {
  /** A whole line within the bound, without its line end. */
  line(text: string): void;
  /** A line over the bound has ended: its first and last bytes (at most KEPT_END_BYTES each), as text. */
  oversized(head: string, tail: string): void;
}

/** Cuts a byte stream into lines of at most `maxBytes` bytes each (a trailing CR is not part of a line). */
export class LineReader {
  private parts: Buffer[] = [];
  private bytes = 0;
  /** Set while the rest of a line over the bound is skipped: its first bytes. */
  private head: Buffer | undefined;
  private tail: Buffer = Buffer.alloc(0);

  constructor(
    private readonly maxBytes: number,
    private readonly sink: LineSink,
  ) {}

  /** Adds a chunk of the stream; hands on every line it ends. */
  push(chunk: Buffer): void {
    let from = 0;
    while (from <= chunk.length) {
      const newline = chunk.indexOf(LF, from);
      const end = newline === -1 ? chunk.length : newline;
      if (end > from) this.add(chunk.subarray(from, end));
      if (newline === -1) return;
      this.endLine();
      from = newline + 1;
    }
  }

  /** Forgets a line in progress (the stream closed). */
  clear(): void {
    this.parts = [];
    this.bytes = 0;
    this.head = undefined;
    this.tail = Buffer.alloc(0);
  }

  private add(piece: Buffer): void {
    if (this.head !== undefined) {
      this.keepTail(piece);
      return;
    }
    if (this.bytes + piece.length <= this.maxBytes) {
      this.parts.push(piece);
      this.bytes += piece.length;
      return;
    }
    const pieces = [...this.parts, piece];
    this.head = Buffer.from(Buffer.concat(firstPieces(pieces, KEPT_END_BYTES)).subarray(0, KEPT_END_BYTES));
    this.tail = Buffer.from(Buffer.concat(lastPieces(pieces, KEPT_END_BYTES)).subarray(-KEPT_END_BYTES));
    this.parts = [];
    this.bytes = 0;
  }

  /** Keeps the last KEPT_END_BYTES of the skipped line, copied so the pipe's chunks are not held. */
  private keepTail(piece: Buffer): void {
    if (piece.length >= KEPT_END_BYTES) this.tail = Buffer.from(piece.subarray(piece.length - KEPT_END_BYTES));
    else this.tail = Buffer.concat([this.tail, piece]).subarray(-KEPT_END_BYTES);
  }

  private endLine(): void {
    const head = this.head;
    if (head !== undefined) {
      const tail = this.tail;
      this.clear();
      this.sink.oversized(head.toString("utf8"), withoutCr(tail).toString("utf8"));
      return;
    }
    const parts = this.parts;
    const line = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.bytes);
    this.parts = [];
    this.bytes = 0;
    this.sink.line(withoutCr(line).toString("utf8"));
  }
}

/** The fewest leading pieces that hold `bytes` bytes (or all of them). */
function firstPieces(pieces: readonly Buffer[], bytes: number): Buffer[] {
  const out: Buffer[] = [];
  let held = 0;
  for (const piece of pieces) {
    if (held >= bytes) break;
    out.push(piece);
    held += piece.length;
  }
  return out;
}

/** The fewest trailing pieces that hold `bytes` bytes (or all of them). */
function lastPieces(pieces: readonly Buffer[], bytes: number): Buffer[] {
  return firstPieces([...pieces].reverse(), bytes).reverse();
}

/** A line without the CR of a CRLF line end. */
function withoutCr(line: Buffer): Buffer {
  return line.length > 0 && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
}
