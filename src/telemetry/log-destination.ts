/**
 * The gateway's log destination: stdout (fd 1) or a file, written asynchronously by pino's destination
 * (sonic-boom) in batches. The lines of a batch are kept in a list and handed over as one string: given
 * them one by one, sonic-boom appends each to its pending text and measures that text's byte length, which
 * copies all of it again for every line written. A stop loses no line: a batch's timer keeps the process
 * up until it has been handed over, and process.exit() writes what is pending synchronously.
 */
import { pino } from "pino";

/**
 * Characters of lines gathered before they are written in one system call. Each write is a trip through
 * libuv's thread pool and back, which under load costs as much as building dozens of lines: a batch holds
 * about 80 access lines, well inside a pipe's 64 KiB buffer.
 */
const BATCH_CHARS = 16_384;

/** The longest a line waits for its batch to fill before it is written anyway. */
const FLUSH_MS = 100;

/** Where a logger writes its lines (what pino needs of a destination stream). */
export interface LogDestination {
  write(line: string): unknown;
}

/**
 * The destinations not yet ended, whose gathered lines exit writes; one exit listener serves them all. Held
 * weakly, as pino holds its own destinations: one with lines pending is kept alive by its batch's timer.
 */
const open = new Set<WeakRef<BatchedLogDestination>>();
let listening = false;

function flushAtExit(): void {
  for (const ref of open) {
    try {
      ref.deref()?.flushSync();
    } catch {
      // A file not open yet, or closed already, takes no more lines; exiting must not throw for it.
    }
  }
}

/** Lines gathered into batches in front of a sonic-boom writer. */
export class BatchedLogDestination implements LogDestination {
  readonly #sink: ReturnType<typeof pino.destination>;
  readonly #ref = new WeakRef(this);
  #lines: string[] = [];
  #chars = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(dest: number | string) {
    // pino's destination stops writing once its reader has gone (EPIPE), and ends itself at exit.
    this.#sink = pino.destination({ dest, sync: false, minLength: 0 });
    for (const ref of open) if (ref.deref() === undefined) open.delete(ref);
    open.add(this.#ref);
    if (!listening) {
      listening = true;
      process.on("exit", flushAtExit);
    }
  }

  write(line: string): boolean {
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars >= BATCH_CHARS) this.#pass();
    else this.#timer ??= setTimeout(BatchedLogDestination.#due, FLUSH_MS, this);
    return true;
  }

  /** Writes everything pending before returning (pino calls it after a fatal line). */
  flushSync(): void {
    this.#pass();
    this.#sink.flushSync();
  }

  /** Writes what is pending, then closes the file; `closed` runs once it is closed. */
  end(closed?: () => void): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pass();
    open.delete(this.#ref);
    if (closed !== undefined) this.#sink.once("close", closed);
    this.#sink.end();
  }

  /**
   * Hands the gathered lines to sonic-boom as one string. A batch that fills leaves its timer armed: the
   * timer then finds the next batch, or nothing, instead of being cleared and set again for every batch.
   */
  #pass(): void {
    if (this.#lines.length === 0) return;
    const text = this.#lines.length === 1 ? (this.#lines[0] as string) : this.#lines.join("");
    this.#lines = [];
    this.#chars = 0;
    this.#sink.write(text);
  }

  static #due(destination: BatchedLogDestination): void {
    destination.#timer = undefined;
    destination.#pass();
  }
}
