/**
 * The governance hierarchy in memory: business units > customers > teams > virtual keys, each level with
 * an optional budget (USD) and rate limit (requests and tokens). Every level a request belongs to is
 * checked before it runs (most specific first, so a refusal names the nearest exhausted level) and every
 * level is charged the same request, cost and tokens. The hot path reads and writes only this memory; the
 * owner persists `snapshot()` on an interval and feeds it back through `restore()` at start-up.
 */
import { currentWindowStart, windowEnd, type WindowSpec } from "./limit-window.js";
import type { Clock, VirtualKey } from "./types.js";

/** A level of the hierarchy. */
export type Level = "virtual_key" | "team" | "customer" | "business_unit";

/** A spending cap over a window. */
export interface LevelBudget {
  maxLimit: number;
  window: WindowSpec;
  calendarAligned: boolean;
}

/** Request and token caps, each over its own window; either may be absent. */
export interface LevelRateLimit {
  requests: { maxLimit: number; window: WindowSpec } | null;
  tokens: { maxLimit: number; window: WindowSpec } | null;
}

/** One owner of limits: a business unit, customer, team, or a virtual key's own limits. */
export interface LevelOwner {
  level: Level;
  id: string;
  name: string;
  /** The customer of a team, the business unit of a customer; "" for none. */
  parentId: string;
  budget: LevelBudget | null;
  rateLimit: LevelRateLimit | null;
}

/** Which limit of which level refuses a request. */
export interface LevelExceeded {
  owner: LevelOwner;
  limit: "budget" | "requests" | "tokens";
}

/** One window's state, as the usage API shows it. */
export interface WindowState {
  used: number;
  maxLimit: number;
  resetDuration: string;
  resetsAt: number;
}

/** A level's current windows. */
export interface LevelUsage {
  owner: LevelOwner;
  budget: WindowState | null;
  requests: WindowState | null;
  tokens: WindowState | null;
}

/** One window's running total, from its start (ms since the epoch). */
export interface Counter {
  start: number;
  used: number;
}

/** The windows of one level's owner; null before its first request. */
export interface Counters {
  budget: Counter | null;
  requests: Counter | null;
  tokens: Counter | null;
}

/** Every owner's counters, safe to JSON-encode; `revision` grows with every count. */
export interface HierarchySnapshot {
  revision: number;
  /** `ownerKey` is `<level>:<id>`. */
  entries: { ownerKey: string; counters: Counters }[];
}

function key(level: Level, id: string): string {
  return `${level}:${id}`;
}

/** The hierarchy's owners and counters. */
export class Hierarchy {
  readonly #owners = new Map<string, LevelOwner>();
  readonly #counters = new Map<string, Counters>();
  readonly #now: Clock;
  #revision = 0;

  constructor(now: Clock = Date.now) {
    this.#now = now;
  }

  /** Adds or replaces a business unit, customer or team (counters are kept). */
  put(owner: LevelOwner): void {
    this.#owners.set(key(owner.level, owner.id), owner);
  }

  /** Removes an owner and its counters. */
  remove(level: Level, id: string): void {
    this.#owners.delete(key(level, id));
    if (this.#counters.delete(key(level, id))) this.#revision += 1;
  }

  /** The owner of a level, or null. */
  get(level: "team" | "customer" | "business_unit", id: string): LevelOwner | null {
    return this.#owners.get(key(level, id)) ?? null;
  }

  /** The team and customer a key belongs to (the customer through its team when the key names none). */
  membership(virtualKey: VirtualKey): { team: LevelOwner | null; customer: LevelOwner | null } {
    const team = virtualKey.teamId === "" ? null : this.get("team", virtualKey.teamId);
    const customerId = virtualKey.customerId !== "" ? virtualKey.customerId : (team?.parentId ?? "");
    return { team, customer: customerId === "" ? null : this.get("customer", customerId) };
  }

  /** The levels of a key, most specific first: the key itself, its team, customer and business unit. */
  chain(virtualKey: VirtualKey): LevelOwner[] {
    const own: LevelOwner = { level: "virtual_key", id: virtualKey.id, name: virtualKey.name, parentId: "", budget: virtualKey.budget, rateLimit: virtualKey.rateLimit };
    const { team, customer } = this.membership(virtualKey);
    const unit = customer === null || customer.parentId === "" ? null : this.get("business_unit", customer.parentId);
    return [own, team, customer, unit].filter((owner): owner is LevelOwner => owner !== null);
  }

  #window(owner: LevelOwner, which: keyof Counters, spec: WindowSpec, aligned: boolean, now: number): Counter {
    const counters = this.#counters.get(key(owner.level, owner.id));
    const last = counters?.[which] ?? null;
    const start = currentWindowStart(spec, aligned, last?.start ?? null, now);
    return last !== null && last.start === start ? last : { start, used: 0 };
  }

  /** The first level (most specific) whose budget or rate limit is exhausted, or null. */
  exceeded(virtualKey: VirtualKey): LevelExceeded | null {
    const now = this.#now();
    for (const owner of this.chain(virtualKey)) {
      const { budget, rateLimit } = owner;
      if (budget !== null && this.#window(owner, "budget", budget.window, budget.calendarAligned, now).used >= budget.maxLimit) return { owner, limit: "budget" };
      const requests = rateLimit?.requests ?? null;
      if (requests !== null && this.#window(owner, "requests", requests.window, false, now).used >= requests.maxLimit) return { owner, limit: "requests" };
      const tokens = rateLimit?.tokens ?? null;
      if (tokens !== null && this.#window(owner, "tokens", tokens.window, false, now).used >= tokens.maxLimit) return { owner, limit: "tokens" };
    }
    return null;
  }

  #add(owner: LevelOwner, which: keyof Counters, spec: WindowSpec, aligned: boolean, amount: number, now: number): void {
    const id = key(owner.level, owner.id);
    const counters = this.#counters.get(id) ?? { budget: null, requests: null, tokens: null };
    const window = this.#window(owner, which, spec, aligned, now);
    counters[which] = { start: window.start, used: window.used + amount };
    this.#counters.set(id, counters);
    this.#revision += 1;
  }

  /** The revision of the counters; compare with a stored snapshot's to skip writing unchanged state. */
  get revision(): number {
    return this.#revision;
  }

  /** A deep copy of every counter, for asynchronous persistence. */
  snapshot(): HierarchySnapshot {
    return { revision: this.#revision, entries: [...this.#counters].map(([ownerKey, counters]) => ({ ownerKey, counters: structuredClone(counters) })) };
  }

  /** Replaces every counter with stored ones (start-up, before traffic); windows that passed restart on use. */
  restore(entries: readonly { ownerKey: string; counters: Counters }[]): void {
    this.#counters.clear();
    for (const entry of entries) this.#counters.set(entry.ownerKey, structuredClone(entry.counters));
  }

  /** Counts an admitted request at every level that limits requests. */
  admit(virtualKey: VirtualKey): void {
    const now = this.#now();
    for (const owner of this.chain(virtualKey)) {
      const requests = owner.rateLimit?.requests ?? null;
      if (requests !== null) this.#add(owner, "requests", requests.window, false, 1, now);
    }
  }

  /** Charges a finished request's cost and tokens to every level. */
  charge(virtualKey: VirtualKey, costUsd: number, tokens: number): void {
    const now = this.#now();
    for (const owner of this.chain(virtualKey)) {
      if (owner.budget !== null && costUsd > 0) this.#add(owner, "budget", owner.budget.window, owner.budget.calendarAligned, costUsd, now);
      const limit = owner.rateLimit?.tokens ?? null;
      if (limit !== null && tokens > 0) this.#add(owner, "tokens", limit.window, false, tokens, now);
    }
  }

  /** The current windows of every level of a key, most specific first. */
  usage(virtualKey: VirtualKey): LevelUsage[] {
    const now = this.#now();
    return this.chain(virtualKey).map((owner) => this.#usageOf(owner, now));
  }

  /** The current windows of every business unit, customer and team. */
  groups(): LevelUsage[] {
    const now = this.#now();
    return [...this.#owners.values()].map((owner) => this.#usageOf(owner, now));
  }

  #usageOf(owner: LevelOwner, now: number): LevelUsage {
    const state = (owner: LevelOwner, which: keyof Counters, limit: { maxLimit: number; window: WindowSpec } | null, aligned: boolean): WindowState | null => {
      if (limit === null) return null;
      const window = this.#window(owner, which, limit.window, aligned, now);
      return { used: window.used, maxLimit: limit.maxLimit, resetDuration: limit.window.text, resetsAt: windowEnd(limit.window, window.start) };
    };
    return {
      owner,
      budget: state(owner, "budget", owner.budget, owner.budget?.calendarAligned ?? false),
      requests: state(owner, "requests", owner.rateLimit?.requests ?? null, false),
      tokens: state(owner, "tokens", owner.rateLimit?.tokens ?? null, false),
    };
  }

  /** Percent (0-100) of the key's tightest hierarchy limit, for routing rules. */
  percentUsed(virtualKey: VirtualKey): { budget: number; tokens: number; requests: number } {
    let budget = 0;
    let tokens = 0;
    let requests = 0;
    const pct = (w: WindowState | null): number => (w === null || w.maxLimit <= 0 ? 0 : Math.min(100, (w.used / w.maxLimit) * 100));
    for (const level of this.usage(virtualKey)) {
      budget = Math.max(budget, pct(level.budget));
      tokens = Math.max(tokens, pct(level.tokens));
      requests = Math.max(requests, pct(level.requests));
    }
    return { budget, tokens, requests };
  }
}
