/**
 * A provider's concurrency_and_buffer_size: at most `concurrency` upstream calls hold a slot at once, and
 * the others wait for one in arrival order. A waiting caller that leaves gives up its place. The buffer
 * only decides when a newcomer may be refused: with `dropWhenFull`, once `bufferSize` calls are waiting,
 * the next one is refused at once instead of waiting too.
 */
import type { AbortSource } from "../cancellation.js";
import { GatewayError } from "../errors.js";

/** One caller waiting for a slot; it is its own abort listener, so waiting allocates no closure of ours. */
class Waiter {
  constructor(
    private readonly queue: Set<Waiter>,
    readonly signal: AbortSource | undefined,
    readonly resolve: () => void,
    private readonly reject: (reason: unknown) => void,
  ) {}

  /** The caller left while waiting: its place goes to the next in line. */
  handleEvent(): void {
    if (this.queue.delete(this)) this.reject(this.signal?.reason);
  }
}

/** The slots of one provider. */
export class CallLimiter {
  #inFlight = 0;
  /** Insertion-ordered, so the first entry is the longest waiting; deleting a caller that left is O(1). */
  readonly #waiting = new Set<Waiter>();

  constructor(
    readonly provider: string,
    readonly concurrency: number,
    readonly bufferSize: number,
  ) {}

  /** Calls holding a slot now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /**
   * Takes a slot: null when one was free, so the call may start at once; otherwise a promise that resolves
   * once a slot passes to this call, or rejects with the abort reason if `signal` aborts first. Throws
   * instead of waiting when `signal` has already aborted (its reason) and, with `dropWhenFull`, when
   * `bufferSize` calls are already waiting (a 429 `gateway_queue_full`). Every slot taken must be given
   * back with release().
   */
  acquire(signal: AbortSource | undefined, dropWhenFull: boolean): Promise<void> | null {
    if (this.#inFlight < this.concurrency) {
      this.#inFlight++;
      return null;
    }
    if (signal?.aborted) throw signal.reason;
    if (dropWhenFull && this.#waiting.size >= this.bufferSize) throw this.#queueFull();
    return new Promise<void>((resolve, reject) => {
      const waiter = new Waiter(this.#waiting, signal, resolve, reject);
      this.#waiting.add(waiter);
      signal?.addEventListener("abort", waiter, { once: true });
    });
  }

  /** Gives a slot back: the longest waiting call gets it, else it is free again. */
  release(): void {
    const next = this.#waiting.values().next();
    if (next.done === true) {
      this.#inFlight--;
      return;
    }
    const waiter = next.value;
    this.#waiting.delete(waiter);
    waiter.signal?.removeEventListener("abort", waiter);
    waiter.resolve();
  }

  #queueFull(): GatewayError {
    return new GatewayError(
      "resource_exhausted",
      `provider "${this.provider}" is at its limit: ${this.concurrency} upstream call(s) in flight and ${this.bufferSize} waiting (concurrency_and_buffer_size); ` +
        "client.drop_excess_requests refuses further requests until a slot frees, so retry shortly",
      { type: "gateway_queue_full", httpStatus: 429 },
    );
  }
}
