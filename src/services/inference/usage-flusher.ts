/**
 * Writes the in-memory counters (the provider configs' budgets and token limits, and every hierarchy
 * level's budget, request and token windows) to the store on an interval and at shutdown, off the request
 * path: a restart loses at most one interval of counts. The usage history's minute buckets go with them,
 * and buckets past their retention are swept once a minute.
 */

/** How often old usage history buckets are swept. */
const SWEEP_INTERVAL_MS = 60_000;
import { LevelUsageRecord, UsageRecord, type Store } from "../../store/index.js";
import type { Hierarchy } from "../../routing/hierarchy.js";
import type { UsageLimits } from "../../routing/usage-limits.js";
import type { Logger } from "../../telemetry/logger.js";
import type { UsageHistory } from "../../telemetry/usage-history.js";
import { UsageHistoryStore } from "./usage-history-store.js";

/** Default flush interval. */
export const DEFAULT_USAGE_FLUSH_MS = 1_000;

/** Periodic persistence of UsageLimits and the hierarchy's counters. */
export class UsageFlusher {
  readonly #store: Store;
  readonly #limits: UsageLimits;
  readonly #hierarchy: Hierarchy;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #written = 0;
  #levelsWritten = 0;
  #running: Promise<void> | undefined;
  readonly #history: UsageHistoryStore | undefined;
  #sweptAt = 0;

  constructor(store: Store, counters: { limits: UsageLimits; hierarchy: Hierarchy; usageHistory?: UsageHistory }, logger: Logger, intervalMs = DEFAULT_USAGE_FLUSH_MS) {
    this.#store = store;
    this.#limits = counters.limits;
    this.#hierarchy = counters.hierarchy;
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#written = counters.limits.revision;
    this.#levelsWritten = counters.hierarchy.revision;
    this.#history = counters.usageHistory ? new UsageHistoryStore(store, counters.usageHistory) : undefined;
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
    await this.#writeLevels();
    await this.#writeHistory();
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

  async #writeLevels(): Promise<void> {
    if (this.#hierarchy.revision === this.#levelsWritten) return;
    const snapshot = this.#hierarchy.snapshot();
    try {
      const em = this.#store.fork();
      // Counters of removed owners go too, so an owner created again under the same id starts from zero.
      await em.nativeDelete(LevelUsageRecord, { ownerKey: { $nin: snapshot.entries.map((entry) => entry.ownerKey) } });
      if (snapshot.entries.length > 0) {
        await em.upsertMany(
          LevelUsageRecord,
          snapshot.entries.map((entry) => ({ ownerKey: entry.ownerKey, budget: entry.counters.budget, requests: entry.counters.requests, tokens: entry.counters.tokens, updatedAt: new Date() })),
        );
      }
      this.#levelsWritten = snapshot.revision;
    } catch (err) {
      this.#logger.warn({ err }, "could not persist the hierarchy's usage counters; retrying at the next interval");
    }
  }

  async #writeHistory(): Promise<void> {
    if (!this.#history) return;
    try {
      await this.#history.write();
      if (Date.now() - this.#sweptAt >= SWEEP_INTERVAL_MS) {
        this.#sweptAt = Date.now();
        await this.#history.sweep();
      }
    } catch (err) {
      this.#logger.warn({ err }, "could not persist the usage history; retrying at the next interval");
    }
  }

  /** Stops the interval and writes what is left. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    // A write already under way may have read the counters before the last requests: the second flush writes those.
    await this.flush();
    await this.flush();
  }
}
