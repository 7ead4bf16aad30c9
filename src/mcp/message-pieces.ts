/**
 * One message from an upstream server gathered as the pieces of the stream it arrives in, up to the bound on
 * one message: a stdio line (stdio-lines.ts) or a legacy SSE event (event-gate.ts). Past the bound only the
 * message's first and last bytes are kept, copied so the stream's chunks are not held, until it ends: enough
 * for the keys and the id around its one large value (message-bound.ts reads which request it answered).
 */

/** Bytes kept of each end of a message over the bound. */
export const KEPT_END_BYTES = 1024;

/** A message that ended: its pieces when within the bound, or only its ends when it passed it. */
export type GatheredMessage = { over: false; pieces: Buffer[]; bytes: number } | { over: true; head: Buffer; tail: Buffer };

/** Gathers one message after another, each bounded to `maxBytes`. */
export class MessagePieces {
  private pieces: Buffer[] = [];
  private bytes = 0;
  /** Set once the message in progress passed the bound: its first bytes, then its last. */
  private head: Buffer | undefined;
  private tail: Buffer = Buffer.alloc(0);

  constructor(private readonly maxBytes: number) {}

  /** Adds the next piece of the message in progress. */
  add(piece: Buffer): void {
    if (this.head !== undefined) {
      if (piece.length >= KEPT_END_BYTES) this.tail = Buffer.from(piece.subarray(piece.length - KEPT_END_BYTES));
      else this.tail = Buffer.concat([this.tail, piece]).subarray(-KEPT_END_BYTES);
      return;
    }
    if (this.bytes + piece.length <= this.maxBytes) {
      this.pieces.push(piece);
      this.bytes += piece.length;
      return;
    }
    const pieces = [...this.pieces, piece];
    this.head = Buffer.from(Buffer.concat(firstPieces(pieces, KEPT_END_BYTES)).subarray(0, KEPT_END_BYTES));
    this.tail = Buffer.from(Buffer.concat(firstPieces(pieces.reverse(), KEPT_END_BYTES).reverse()).subarray(-KEPT_END_BYTES));
    this.pieces = [];
    this.bytes = 0;
  }

  /** Ends the message in progress and starts the next. */
  end(): GatheredMessage {
    const { head, tail, pieces, bytes } = this;
    this.clear();
    return head === undefined ? { over: false, pieces, bytes } : { over: true, head, tail };
  }

  /** Forgets the message in progress (the stream closed). */
  clear(): void {
    this.pieces = [];
    this.bytes = 0;
    this.head = undefined;
    this.tail = Buffer.alloc(0);
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
