/**
 * Shared counters in Redis with the database behind them: while Redis does not answer, leases and returns
 * go to the database (with a warning), so an outage of Redis never fails a request.
 */
import type { CounterBackend, LeaseGrant, LeaseRequest } from "../store/index.js";

/** Redis first, the database when Redis fails. */
export class FallbackCounters implements CounterBackend {
  readonly #primary: CounterBackend;
  readonly #fallback: CounterBackend;
  readonly #warn: (err: unknown) => void;

  constructor(primary: CounterBackend, fallback: CounterBackend, warn: (err: unknown) => void) {
    this.#primary = primary;
    this.#fallback = fallback;
    this.#warn = warn;
  }

  async lease(request: LeaseRequest): Promise<LeaseGrant> {
    try {
      return await this.#primary.lease(request);
    } catch (err) {
      this.#warn(err);
      return this.#fallback.lease(request);
    }
  }

  async adjust(key: string, start: number, amount: number): Promise<void> {
    try {
      await this.#primary.adjust(key, start, amount);
    } catch (err) {
      this.#warn(err);
      await this.#fallback.adjust(key, start, amount);
    }
  }
}
