/**
 * Budget and rate-limit counters shared by the nodes of a cluster, spent from memory. A node leases a
 * slice of a counter from the shared backend (at most what remains divided by twice the live nodes, and at
 * least what the request in hand needs, capped at what remains) and spends it locally, so a request awaits
 * the backend only when its node's slice is used up. Since no lease grants past the limit, the cluster
 * overspends only by what requests cost beyond their reservation. A cost counter with some room left but less
 * than a request's worst case admits it with the room there is, one such request per node at a time: without
 * that, each reservation a running request gave back unspent would admit one more at a loss, and a busy node
 * could overspend by several requests.
 */
import type { CounterBackend, LeaseGrant } from "../store/index.js";
import { currentWindowStart, windowEnd, type WindowSpec } from "./limit-window.js";
import type { Clock } from "./types.js";

/** One counter a request needs room in. */
export interface LedgerItem<T> {
  /** The counter's shared key, e.g. `virtual_key:vk-a:requests`. */
  key: string;
  max: number;
  window: WindowSpec;
  calendarAligned: boolean;
  /** What the request wants to reserve (its count, or its worst-case cost or tokens). */
  amount: number;
  /** Counts whole units: the full amount or a refusal. Otherwise the reservation is capped at what remains. */
  whole: boolean;
  /** Handed back when this counter refuses the request. */
  ref: T;
}

/** What a request holds in each counter, until it settles. */
export interface LedgerHold {
  /** `partial`: the entry holds less than the request's worst case (the last room of its node's slice). */
  entries: { key: string; start: number; amount: number; partial: boolean }[];
  settled: boolean;
}

/** Either the request's hold, or the counter that has nothing left. */
export type LedgerResult<T> = { hold: LedgerHold } | { refused: T };

interface Slice {
  start: number;
  end: number;
  /** Leased and not yet spent; negative when requests cost more than they reserved (charged at the next lease). */
  available: number;
  /** A request admitted with less than its worst case is running: no other may be until it settles. */
  partialHeld: boolean;
}

/** Where the ledger reports trouble with its backend. */
export interface LedgerWarn {
  (err: unknown, message: string): void;
}

const MONTH_UNITS = new Set(["M", "Q", "Y"]);

/** A node's slices of the shared counters. */
export class SharedLedger {
  readonly #backend: CounterBackend;
  readonly #nodes: () => number;
  readonly #now: Clock;
  readonly #warn: LedgerWarn;
  readonly #slices = new Map<string, Slice>();
  readonly #leasing = new Map<string, Promise<void>>();
  #lastWarnAt = -Infinity;

  constructor(options: { backend: CounterBackend; liveNodes: () => number; clock?: Clock; warn: LedgerWarn }) {
    this.#backend = options.backend;
    this.#nodes = options.liveNodes;
    this.#now = options.clock ?? Date.now;
    this.#warn = options.warn;
  }

  #slice(key: string, now: number): Slice | null {
    const slice = this.#slices.get(key);
    if (slice === undefined) return null;
    if (now < slice.end) return slice;
    // What a past window left unspent or overspent belongs to it; the new window starts clean.
    this.#slices.delete(key);
    return null;
  }

  #available(key: string, now: number): number {
    return this.#slice(key, now)?.available ?? 0;
  }

  /** Reserves every item, or none: synchronously while the slices hold enough, else after leasing more. */
  reserve<T>(items: readonly LedgerItem<T>[]): LedgerResult<T> | Promise<LedgerResult<T>> {
    const now = this.#now();
    if (items.every((item) => this.#available(item.key, now) >= item.amount)) return { hold: this.#take(items, items.map((item) => item.amount), now) };
    return this.#reserveSlowly(items);
  }

  async #reserveSlowly<T>(items: readonly LedgerItem<T>[]): Promise<LedgerResult<T>> {
    const amounts = items.map((item) => item.amount);
    for (;;) {
      const now = this.#now();
      const index = items.findIndex((item, i) => this.#available(item.key, now) < (amounts[i] as number));
      if (index < 0) {
        // Decided at the take, which nothing interleaves with: two requests may both have settled for less.
        const crowded = items.find((item, i) => (amounts[i] as number) < item.amount && this.#slice(item.key, now)?.partialHeld === true);
        return crowded === undefined ? { hold: this.#take(items, amounts, now) } : { refused: crowded.ref };
      }
      const item = items[index] as LedgerItem<T>;
      const progressed = await this.#fill(item, (amounts[index] as number) - this.#available(item.key, now), now);
      if (progressed) continue;
      const left = this.#available(item.key, this.#now());
      // A cost is reserved up to what remains; a count needs its whole unit.
      if (!item.whole && left > 0) {
        amounts[index] = left;
        continue;
      }
      return { refused: item.ref };
    }
  }

  #take<T>(items: readonly LedgerItem<T>[], amounts: readonly number[], now: number): LedgerHold {
    const entries = items.map((item, i) => {
      const slice = this.#slice(item.key, now) as Slice;
      const amount = amounts[i] as number;
      const partial = amount < item.amount;
      slice.available -= amount;
      if (partial) slice.partialHeld = true;
      return { key: item.key, start: slice.start, amount, partial };
    });
    return { entries, settled: false };
  }

  /** Leases at least `need` more of the item's counter; false when the backend has nothing left to give. */
  async #fill<T>(item: LedgerItem<T>, need: number, now: number): Promise<boolean> {
    const running = this.#leasing.get(item.key);
    if (running !== undefined) {
      // Another request of this node is leasing the same counter: look again once it has.
      await running;
      return true;
    }
    let granted = 0;
    const lease = this.#lease(item, need, now)
      .then((grant) => {
        granted = grant.granted;
        const slice = this.#slices.get(item.key);
        if (slice !== undefined && slice.start === grant.start) slice.available += grant.granted;
        else this.#slices.set(item.key, { start: grant.start, end: grant.end, available: grant.granted, partialHeld: false });
      })
      .finally(() => this.#leasing.delete(item.key));
    this.#leasing.set(item.key, lease);
    await lease;
    return granted > 0;
  }

  async #lease<T>(item: LedgerItem<T>, need: number, now: number): Promise<LeaseGrant> {
    const known = this.#slices.get(item.key)?.start ?? null;
    const start = currentWindowStart(item.window, item.calendarAligned, known, now);
    const end = windowEnd(item.window, start);
    const lengthMs = MONTH_UNITS.has(item.window.unit) ? 0 : end - start;
    try {
      return await this.#backend.lease({ key: item.key, start, end, lengthMs, now, want: need, max: item.max, integral: item.whole, nodes: this.#nodes() });
    } catch (err) {
      // The limits cannot be checked while the backend is down; serving on beats refusing every request.
      if (now - this.#lastWarnAt > 10_000) {
        this.#lastWarnAt = now;
        this.#warn(err, "could not lease from the shared budget and rate-limit counters; requests pass unchecked until they answer");
      }
      const slice = this.#slice(item.key, now);
      return { start: slice?.start ?? start, end: slice?.end ?? end, granted: need, used: 0 };
    }
  }

  /** Settles a hold: what a request reserved and did not spend goes back to the slice, what it overspent is owed. */
  settle(hold: LedgerHold, actual: (key: string) => number): void {
    if (hold.settled) return;
    hold.settled = true;
    const now = this.#now();
    for (const entry of hold.entries) {
      const slice = this.#slice(entry.key, now);
      if (slice === null || slice.start !== entry.start) continue;
      slice.available += entry.amount - actual(entry.key);
      if (entry.partial) slice.partialHeld = false;
    }
  }

  /**
   * Charges what a request spent in a counter it reserved nothing in (a fallback answered): taken from this
   * node's slice, so the next lease pays it when the slice runs short. Without a slice in the current window
   * the charge is not counted.
   */
  charge(key: string, amount: number): void {
    const slice = this.#slice(key, this.#now());
    if (slice !== null && amount > 0) slice.available -= amount;
  }

  /** Gives every unspent slice back (and pays what was overspent), for a graceful stop. */
  async returnSlices(): Promise<void> {
    await Promise.allSettled(this.#leasing.values());
    const now = this.#now();
    const returns = [...this.#slices].flatMap(([key, slice]) => (now < slice.end && slice.available !== 0 ? [this.#backend.adjust(key, slice.start, -slice.available)] : []));
    this.#slices.clear();
    const results = await Promise.allSettled(returns);
    const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
    if (failed !== undefined) this.#warn(failed.reason, "could not return this node's unspent budget and rate-limit slices; the other nodes get them when the windows reset");
  }
}
