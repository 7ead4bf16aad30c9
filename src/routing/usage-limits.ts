/**
 * In-memory budget and token counters per (virtual key, provider config), in fixed windows that restart
 * after their reset duration. A request routed to a config reserves its worst case in them before the
 * upstream call (capped at what remains) and releases it once its actual spend is recorded, so concurrent
 * requests cannot all pass the last unit of room; a window with less room than a request's worst case admits
 * one such request at a time, as the governance hierarchy does. The hot path reads and writes only this
 * memory; the owner persists `snapshot()` on an interval and feeds it back through `restore()` at start-up,
 * so a restart loses at most one interval of counts.
 */
import { innerMap } from "../telemetry/nested-map.js";
import type { Clock, ProviderConfig } from "./types.js";

/** Why a provider config cannot take more traffic now. */
export type LimitExceeded = "budget" | "rate_limit";

/** One window's running total. */
export interface WindowUsage {
  windowStartMs: number;
  used: number;
}

/** Counters of one provider config of one virtual key; `budgets[i]` belongs to the config's budgets[i]. */
export interface UsageEntry {
  virtualKeyId: string;
  provider: string;
  budgets: (WindowUsage | null)[];
  tokens: WindowUsage | null;
}

/** Everything the tracker holds, safe to JSON-encode; `revision` grows with every recorded request. */
export interface UsageSnapshot {
  revision: number;
  entries: UsageEntry[];
}

/** One window of a provider config as the usage API shows it. */
export interface ConfigWindow {
  used: number;
  maxLimit: number;
  resetDurationMs: number;
  resetsAtMs: number;
}

/** What one request cost. */
export interface RequestUsage {
  costUsd: number;
  tokens: number;
}

/** What a request holds of a config's windows until it releases them (`slot`: a budget's index, or "tokens"). */
export interface ConfigHold {
  virtualKeyId: string;
  provider: string;
  /** `partial`: the entry holds less than the request's worst case (the last room of the window). */
  entries: { slot: number | "tokens"; start: number; amount: number; partial: boolean }[];
  released: boolean;
}

/** Reserved and not yet released in the window that starts at `start`; `partial` while a request holding its last room runs. */
interface Reserved {
  start: number;
  amount: number;
  partial: boolean;
}

/** What requests in flight hold of one config's windows; `budgets[i]` belongs to the config's budgets[i]. */
interface ReservedWindows {
  budgets: (Reserved | undefined)[];
  tokens: Reserved | null;
}

/** Moves a window forward to the one containing `now`, zeroing it when a reset boundary passed. */
function current(window: WindowUsage | null, durationMs: number, now: number): WindowUsage {
  if (window === null) return { windowStartMs: now, used: 0 };
  if (!(durationMs > 0) || now < window.windowStartMs + durationMs) return window;
  const periods = Math.floor((now - window.windowStartMs) / durationMs);
  return { windowStartMs: window.windowStartMs + periods * durationMs, used: 0 };
}

/** What `window` holds at `now`: 0 once a reset boundary passed (current() without the new window object). */
function usedAt(window: WindowUsage | null | undefined, durationMs: number, now: number): number {
  if (window === null || window === undefined) return 0;
  return !(durationMs > 0) || now < window.windowStartMs + durationMs ? window.used : 0;
}

function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/** What requests in flight hold of `window`, or null: nothing once it has ended or when they hold another window. */
function reservedIn(reserved: Reserved | null | undefined, window: WindowUsage | null | undefined, durationMs: number, now: number): Reserved | null {
  if (reserved === null || reserved === undefined || window === null || window === undefined || reserved.start !== window.windowStartMs) return null;
  return !(durationMs > 0) || now < window.windowStartMs + durationMs ? reserved : null;
}

/** What requests in flight hold of `window`. */
function heldIn(reserved: Reserved | null | undefined, window: WindowUsage | null | undefined, durationMs: number, now: number): number {
  return reservedIn(reserved, window, durationMs, now)?.amount ?? 0;
}

/** True when `amount` does not fit in what remains of `window` and a request holding its last room runs. */
function crowded(window: WindowUsage | null | undefined, reserved: Reserved | null | undefined, maxLimit: number, durationMs: number, amount: number, now: number): boolean {
  const running = reservedIn(reserved, window, durationMs, now);
  return running !== null && running.partial && maxLimit - usedAt(window, durationMs, now) - running.amount < nonNegative(amount);
}

/** Budget and rate-limit state for every virtual key's provider configs. */
export class UsageLimits {
  readonly #now: Clock;
  // Keyed by virtual key, then provider: a lookup per request never builds a joined key string.
  readonly #entries = new Map<string, Map<string, UsageEntry>>();
  // Apart from the entries: reservations live only as long as their requests and are never persisted.
  readonly #reserved = new Map<string, Map<string, ReservedWindows>>();
  #revision = 0;

  constructor(now: Clock = Date.now) {
    this.#now = now;
  }

  #find(virtualKeyId: string, provider: string): UsageEntry | undefined {
    return this.#entries.get(virtualKeyId)?.get(provider);
  }

  #entry(virtualKeyId: string, provider: string): UsageEntry {
    const byProvider = innerMap(this.#entries, virtualKeyId);
    let entry = byProvider.get(provider);
    if (entry === undefined) {
      entry = { virtualKeyId, provider, budgets: [], tokens: null };
      byProvider.set(provider, entry);
    }
    return entry;
  }

  /**
   * Returns why the config is exhausted in the current windows, counting what requests in flight reserved,
   * or null when it may take traffic.
   */
  exceeded(virtualKeyId: string, config: ProviderConfig): LimitExceeded | null {
    const budgets = config.budgets;
    const limit = config.rateLimit;
    if (budgets.length === 0 && limit === null) return null;
    const entry = this.#find(virtualKeyId, config.provider);
    const reserved = this.#reserved.get(virtualKeyId)?.get(config.provider);
    const now = this.#now();
    // Asked for every request, often several times: read in place, allocating nothing.
    for (let index = 0; index < budgets.length; index++) {
      const budget = budgets[index] as (typeof budgets)[number];
      const window = entry?.budgets[index];
      const used = usedAt(window, budget.resetDurationMs, now) + heldIn(reserved?.budgets[index], window, budget.resetDurationMs, now);
      if (used >= budget.maxLimit) return "budget";
    }
    if (limit !== null) {
      const used = usedAt(entry?.tokens, limit.tokenResetDurationMs, now) + heldIn(reserved?.tokens, entry?.tokens, limit.tokenResetDurationMs, now);
      if (used >= limit.tokenMaxLimit) return "rate_limit";
    }
    return null;
  }

  /**
   * Reserves a request's worst-case cost and tokens in every limited window of the config, each capped at
   * what remains, until `release`; or says which limit has nothing left.
   */
  reserve(virtualKeyId: string, config: ProviderConfig, worst: RequestUsage): ConfigHold | LimitExceeded {
    const over = this.exceeded(virtualKeyId, config);
    if (over !== null) return over;
    const hold: ConfigHold = { virtualKeyId, provider: config.provider, entries: [], released: false };
    if (config.budgets.length === 0 && config.rateLimit === null) return hold;
    const entry = this.#entry(virtualKeyId, config.provider);
    const byProvider = innerMap(this.#reserved, virtualKeyId);
    let reserved = byProvider.get(config.provider);
    if (reserved === undefined) {
      reserved = { budgets: [], tokens: null };
      byProvider.set(config.provider, reserved);
    }
    const now = this.#now();
    // Decided before anything is reserved, so a refusal leaves every window as it was.
    for (const [index, budget] of config.budgets.entries()) {
      if (crowded(entry.budgets[index], reserved.budgets[index], budget.maxLimit, budget.resetDurationMs, worst.costUsd, now)) return "budget";
    }
    const rate = config.rateLimit;
    if (rate !== null && crowded(entry.tokens, reserved.tokens, rate.tokenMaxLimit, rate.tokenResetDurationMs, worst.tokens, now)) return "rate_limit";
    // The window is kept from its first reservation on: one opened at each asker's own `now` would hide the
    // reservations made in it before the first request was recorded.
    for (const [index, budget] of config.budgets.entries()) {
      const window = current(entry.budgets[index] ?? null, budget.resetDurationMs, now);
      entry.budgets[index] = window;
      const before = reservedIn(reserved.budgets[index], window, budget.resetDurationMs, now);
      const wanted = nonNegative(worst.costUsd);
      const amount = Math.min(wanted, budget.maxLimit - window.used - (before?.amount ?? 0));
      if (amount <= 0) continue;
      const partial = amount < wanted;
      reserved.budgets[index] = { start: window.windowStartMs, amount: (before?.amount ?? 0) + amount, partial: partial || before?.partial === true };
      hold.entries.push({ slot: index, start: window.windowStartMs, amount, partial });
    }
    if (rate !== null) {
      const window = current(entry.tokens, rate.tokenResetDurationMs, now);
      entry.tokens = window;
      const before = reservedIn(reserved.tokens, window, rate.tokenResetDurationMs, now);
      const wanted = nonNegative(worst.tokens);
      const amount = Math.min(wanted, rate.tokenMaxLimit - window.used - (before?.amount ?? 0));
      if (amount > 0) {
        const partial = amount < wanted;
        reserved.tokens = { start: window.windowStartMs, amount: (before?.amount ?? 0) + amount, partial: partial || before?.partial === true };
        hold.entries.push({ slot: "tokens", start: window.windowStartMs, amount, partial });
      }
    }
    return hold;
  }

  /** Ends a request's reservations (its actual spend is `record`ed apart); later calls do nothing. */
  release(hold: ConfigHold): void {
    if (hold.released) return;
    hold.released = true;
    const reserved = this.#reserved.get(hold.virtualKeyId)?.get(hold.provider);
    if (reserved === undefined) return;
    for (const { slot, start, amount, partial } of hold.entries) {
      const before = slot === "tokens" ? reserved.tokens : reserved.budgets[slot];
      if (before === null || before === undefined || before.start !== start) continue;
      const left = before.amount - amount;
      const after = left > 1e-12 ? { start, amount: left, partial: before.partial && !partial } : undefined;
      if (slot === "tokens") reserved.tokens = after ?? null;
      else reserved.budgets[slot] = after;
    }
  }

  /**
   * How much of its limits a virtual key has used in the current windows, in percent (0-100, the highest
   * over its provider configs): budgets, and token rate limits. 0 where nothing is configured.
   */
  percentUsed(virtualKeyId: string, configs: readonly ProviderConfig[]): { budget: number; tokens: number } {
    const now = this.#now();
    let budget = 0;
    let tokens = 0;
    for (const config of configs) {
      const entry = this.#find(virtualKeyId, config.provider);
      for (const [index, limit] of config.budgets.entries()) {
        if (limit.maxLimit > 0) budget = Math.max(budget, (current(entry?.budgets[index] ?? null, limit.resetDurationMs, now).used / limit.maxLimit) * 100);
      }
      const rate = config.rateLimit;
      if (rate !== null && rate.tokenMaxLimit > 0) {
        tokens = Math.max(tokens, (current(entry?.tokens ?? null, rate.tokenResetDurationMs, now).used / rate.tokenMaxLimit) * 100);
      }
    }
    return { budget: Math.min(100, budget), tokens: Math.min(100, tokens) };
  }

  /**
   * The config's current windows for the usage API: the budget closest to running out (a config may have
   * several) and the token rate limit; null where nothing is configured. Windows that never reset end never
   * (`resetsAtMs` Infinity).
   */
  windows(virtualKeyId: string, config: ProviderConfig): { budget: ConfigWindow | null; tokens: ConfigWindow | null } {
    const entry = this.#find(virtualKeyId, config.provider);
    const now = this.#now();
    const state = (window: WindowUsage | null, maxLimit: number, durationMs: number): ConfigWindow => {
      const at = current(window, durationMs, now);
      return { used: at.used, maxLimit, resetDurationMs: durationMs, resetsAtMs: durationMs > 0 ? at.windowStartMs + durationMs : Infinity };
    };
    let budget: ConfigWindow | null = null;
    for (const [index, limit] of config.budgets.entries()) {
      const window = state(entry?.budgets[index] ?? null, limit.maxLimit, limit.resetDurationMs);
      const share = (w: ConfigWindow): number => (w.maxLimit > 0 ? w.used / w.maxLimit : 0);
      if (budget === null || share(window) > share(budget)) budget = window;
    }
    const rate = config.rateLimit;
    const tokens = rate === null ? null : state(entry?.tokens ?? null, rate.tokenMaxLimit, rate.tokenResetDurationMs);
    return { budget, tokens };
  }

  /** Adds a finished request's cost and tokens to the config's current windows. */
  record(virtualKeyId: string, config: ProviderConfig, usage: RequestUsage): void {
    const entry = this.#entry(virtualKeyId, config.provider);
    const now = this.#now();
    // Windows are updated in place: none leaves the tracker by reference (snapshot() and windowOf() copy).
    for (const [index, budget] of config.budgets.entries()) {
      const window = current(entry.budgets[index] ?? null, budget.resetDurationMs, now);
      window.used += nonNegative(usage.costUsd);
      entry.budgets[index] = window;
    }
    if (config.rateLimit !== null) {
      const window = current(entry.tokens, config.rateLimit.tokenResetDurationMs, now);
      window.used += nonNegative(usage.tokens);
      entry.tokens = window;
    }
    this.#revision += 1;
  }

  /** The revision of the counters; compare with a stored snapshot's to skip writing unchanged state. */
  get revision(): number {
    return this.#revision;
  }

  /** A deep copy of every counter, for asynchronous persistence. */
  snapshot(): UsageSnapshot {
    return { revision: this.#revision, entries: structuredClone([...this.#entries.values()].flatMap((byProvider) => [...byProvider.values()])) };
  }

  /** Replaces every counter with a snapshot's (start-up, before traffic). */
  restore(snapshot: UsageSnapshot): void {
    this.#entries.clear();
    for (const entry of structuredClone(snapshot.entries)) innerMap(this.#entries, entry.virtualKeyId).set(entry.provider, entry);
    this.#revision = snapshot.revision;
  }

  /** One window of a config's counters as counted here (`slot`: a budget's index, or "tokens"), or null. */
  windowOf(virtualKeyId: string, provider: string, slot: number | "tokens"): WindowUsage | null {
    const entry = this.#find(virtualKeyId, provider);
    if (entry === undefined) return null;
    const window = slot === "tokens" ? entry.tokens : (entry.budgets[slot] ?? null);
    return window === null ? null : { ...window };
  }

  /**
   * Sets one window to what the cluster counted in it (the usage flush on several nodes). Not a request
   * of this node, so the revision stays.
   */
  setWindow(virtualKeyId: string, provider: string, slot: number | "tokens", window: WindowUsage): void {
    const entry = this.#entry(virtualKeyId, provider);
    if (slot === "tokens") {
      entry.tokens = { ...window };
      return;
    }
    while (entry.budgets.length < slot) entry.budgets.push(null);
    entry.budgets[slot] = { ...window };
  }

  /** Drops a virtual key's counters (the key was deleted). */
  forget(virtualKeyId: string): void {
    this.#entries.delete(virtualKeyId);
    this.#reserved.delete(virtualKeyId);
  }
}
