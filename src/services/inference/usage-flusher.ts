/**
 * Writes the in-memory budget and token counters to the store on an interval and at shutdown, off the
 * request path: a restart loses at most one interval of counts.
 */
import { UsageRecord, type Store } from "../../store/index.js";
import type { UsageLimits } from "../../routing/usage-limits.js";
import type { Logger } from "../../telemetry/logger.js";

/** Default flush interval. */
export const DEFAULT_USAGE_FLUSH_MS = 10_000;

/** Periodic persistence of UsageLimits. */
export class UsageFlusher {
  readonly #store: Store;
  readonly #limits: UsageLimits;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #written = 0;
  #running: Promise<void> | undefined;

  constructor(store: Store, limits: UsageLimits, logger: Logger, intervalMs = DEFAULT_USAGE_FLUSH_MS) {
    this.#store = store;
    this.#limits = limits;
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#written = limits.revision;
  }

  /** Starts the interval; the timer never keeps the process alive. */
  start(): void {
    this.#timer = setInterval(() => void this.flush(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Writes the counters when they changed since the last write; never throws (a failure is logged and retried next time). */
  flush(): Promise<void> {
    // One write at a time: a slow database must not pile up overlapping upserts.
    this.#running ??= this.#write().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #write(): Promise<void> {
    if (this.#limits.revision === this.#written) return;
    const snapshot = this.#limits.snapshot();
    try {
      const em = this.#store.fork();
      if (snapshot.entries.length > 0) {
        await em.upsertMany(
          UsageRecord,
          snapshot.entries.map((entry) => ({ virtualKeyId: entry.virtualKeyId, provider: entry.provider, budgets: entry.budgets, tokens: entry.tokens, updatedAt: new Date() })),
        );
      }
      this.#written = snapshot.revision;
    } catch (err) {
      this.#logger.warn({ err }, "could not persist usage counters; retrying at the next interval");
    }
  }

  /** Stops the interval and writes what is left. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }
}
