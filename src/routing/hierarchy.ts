/**
 * The governance hierarchy in memory: business units > customers > teams > virtual keys, each level with
 * an optional budget (USD) and rate limit (requests and tokens). Every level a request belongs to is
 * checked before it runs (most specific first, so a refusal names the nearest exhausted level) and every
 * level is charged the same request, cost and tokens. The hot path reads and writes only this memory; the
 * owner persists `snapshot()` on an interval and feeds it back through `restore()` at start-up.
 *
 * A budget or token window with some room left but less than a request's worst case admits it with the
 * room there is, one such request per window at a time: each reservation a running request gives back
 * unspent would otherwise admit one more at a loss, and concurrent requests could overspend by several.
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

/** What a request holds of the budget and token windows of its levels until it settles. */
export interface HierarchyHold {
  virtualKey: VirtualKey;
  /** `partial`: the entry holds less than the request's worst case (the last room of the window). */
  entries: { owner: LevelOwner; which: "budget" | "tokens"; start: number; amount: number; partial: boolean }[];
  /** The levels that counted the request, with their request window's start. */
  counted: { owner: LevelOwner; start: number }[];
  settled: boolean;
}

/** What a request may spend at most: its worst-case cost and tokens. */
export interface WorstCase {
  costUsd: number;
  tokens: number;
}

/** Every owner's counters, safe to JSON-encode; `revision` grows with every count. */
export interface HierarchySnapshot {
  revision: number;
  /** `ownerKey` is `<level>:<id>`. */
  entries: { ownerKey: string; counters: Counters }[];
}

/** What requests in flight hold of one window. */
interface Pending {
  start: number;
  amount: number;
  partial: boolean;
}

/** A budget or token window of a level as a request read it: its counter, what is held of it, and the room left. */
interface Reading {
  owner: LevelOwner;
  which: "budget" | "tokens";
  window: Counter;
  pending: Pending | null;
  left: number;
}

function key(level: Level, id: string): string {
  return `${level}:${id}`;
}

/** An owner's map keys: of its counters, and of what requests in flight hold of its budget and token windows. */
interface OwnerKeys {
  owner: string;
  budget: string;
  tokens: string;
}

/** The hierarchy's owners and counters. */
export class Hierarchy {
  readonly #owners = new Map<string, LevelOwner>();
  readonly #counters = new Map<string, Counters>();
  /**
   * Reserved and not yet settled, per `<owner key>:<budget|tokens>`, in the window that starts at `start`;
   * `partial` while a request admitted with less than its worst case runs.
   */
  readonly #pending = new Map<string, Pending>();
  readonly #now: Clock;
  /** Owners removed since the flusher last deleted their stored counters. */
  readonly #removed = new Set<string>();
  #revision = 0;
  /** Bumped whenever an owner is added, changed or removed, so what is derived from membership can be rebuilt. */
  #ownersVersion = 0;
  /**
   * Each key's levels, built once per key object and owners version (a key's update replaces its object):
   * a request asks for them at every check, reservation and charge.
   */
  readonly #chains = new WeakMap<VirtualKey, { version: number; chain: readonly LevelOwner[] }>();
  /** Each owner's map keys, made once rather than joined anew at every read of its windows. */
  readonly #keys = new WeakMap<LevelOwner, OwnerKeys>();

  constructor(now: Clock = Date.now) {
    this.#now = now;
  }

  /** Adds or replaces a business unit, customer or team (counters are kept). */
  put(owner: LevelOwner): void {
    this.#owners.set(key(owner.level, owner.id), owner);
    this.#ownersVersion += 1;
  }

  /** Every business unit, customer and team held. */
  owners(): LevelOwner[] {
    return [...this.#owners.values()];
  }

  /** Changes with every owner added, changed or removed. */
  get ownersVersion(): number {
    return this.#ownersVersion;
  }

  /** Removes an owner and its counters. */
  remove(level: Level, id: string): void {
    this.#owners.delete(key(level, id));
    this.#ownersVersion += 1;
    // Stored counters go too, even when this node never counted any: another node may have.
    this.#removed.add(key(level, id));
    this.#counters.delete(key(level, id));
    this.#revision += 1;
  }

  /** Owner keys removed since `forgetRemoved`, whose stored counters are to be deleted. */
  removed(): string[] {
    return [...this.#removed];
  }

  /** Marks removed owners' stored counters as deleted. */
  forgetRemoved(ownerKeys: readonly string[]): void {
    for (const ownerKey of ownerKeys) this.#removed.delete(ownerKey);
  }

  /** One window of an owner's counters as counted here (`ownerKey` is `<level>:<id>`), or null. */
  counterOf(ownerKey: string, which: keyof Counters): Counter | null {
    const counter = this.#counters.get(ownerKey)?.[which] ?? null;
    return counter === null ? null : { ...counter };
  }

  /**
   * Sets one window to what the cluster counted in it (the usage flush on several nodes). Not a count of
   * this node, so the revision stays.
   */
  setCounter(ownerKey: string, which: keyof Counters, counter: Counter): void {
    const counters = this.#counters.get(ownerKey) ?? { budget: null, requests: null, tokens: null };
    counters[which] = { ...counter };
    this.#counters.set(ownerKey, counters);
  }

  /** The end of an owner's window that starts at `start`, or null when the owner or that limit is unknown. */
  windowEndOf(ownerKey: string, which: keyof Counters, start: number, virtualKey: VirtualKey | null): number | null {
    const owner = virtualKey !== null && ownerKey === key("virtual_key", virtualKey.id) ? this.chain(virtualKey)[0] : this.#owners.get(ownerKey);
    if (owner === undefined) return null;
    const spec = which === "budget" ? owner.budget?.window : which === "requests" ? owner.rateLimit?.requests?.window : owner.rateLimit?.tokens?.window;
    return spec === undefined ? null : windowEnd(spec, start);
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

  /**
   * True when no level can limit the key: it has no budget or rate limit of its own and belongs to no
   * team or customer. Every request asks several times, and chain() builds its levels anew each time.
   */
  #limitless(virtualKey: VirtualKey): boolean {
    return virtualKey.budget === null && virtualKey.rateLimit === null && virtualKey.teamId === "" && virtualKey.customerId === "";
  }

  /** The levels of a key, most specific first: the key itself, its team, customer and business unit. */
  chain(virtualKey: VirtualKey): readonly LevelOwner[] {
    const known = this.#chains.get(virtualKey);
    if (known !== undefined && known.version === this.#ownersVersion) return known.chain;
    const own: LevelOwner = { level: "virtual_key", id: virtualKey.id, name: virtualKey.name, parentId: "", budget: virtualKey.budget, rateLimit: virtualKey.rateLimit };
    const { team, customer } = this.membership(virtualKey);
    const unit = customer === null || customer.parentId === "" ? null : this.get("business_unit", customer.parentId);
    const chain = [own, team, customer, unit].filter((owner): owner is LevelOwner => owner !== null);
    this.#chains.set(virtualKey, { version: this.#ownersVersion, chain });
    return chain;
  }

  #keysOf(owner: LevelOwner): OwnerKeys {
    let keys = this.#keys.get(owner);
    if (keys === undefined) {
      const id = key(owner.level, owner.id);
      keys = { owner: id, budget: `${id}:budget`, tokens: `${id}:tokens` };
      this.#keys.set(owner, keys);
    }
    return keys;
  }

  #window(owner: LevelOwner, which: keyof Counters, spec: WindowSpec, aligned: boolean, now: number): Counter {
    const counters = this.#counters.get(this.#keysOf(owner).owner);
    const last = counters?.[which] ?? null;
    const start = currentWindowStart(spec, aligned, last?.start ?? null, now);
    return last !== null && last.start === start ? last : { start, used: 0 };
  }

  /** What requests in flight hold of a window, or null when none holds any. */
  #pendingIn(owner: LevelOwner, which: "budget" | "tokens", start: number): Pending | null {
    const pending = this.#pending.get(this.#keysOf(owner)[which]);
    return pending !== undefined && pending.start === start ? pending : null;
  }

  /** A budget or token window as it stands at `now`, read once for every check and the hold a request makes of it. */
  #read(owner: LevelOwner, which: "budget" | "tokens", limit: { maxLimit: number; window: WindowSpec }, aligned: boolean, now: number): Reading {
    const window = this.#window(owner, which, limit.window, aligned, now);
    const pending = this.#pendingIn(owner, which, window.start);
    return { owner, which, window, pending, left: limit.maxLimit - window.used - (pending?.amount ?? 0) };
  }

  /**
   * Reads the key's limited windows, most specific level first, and stops at the first exhausted one
   * (reservations included): that level refuses. The request windows are read for the check only.
   */
  #readChain(chain: readonly LevelOwner[], now: number, readings: Reading[] | null): LevelExceeded | null {
    for (const owner of chain) {
      const { budget, rateLimit } = owner;
      if (budget !== null) {
        const reading = this.#read(owner, "budget", budget, budget.calendarAligned, now);
        if (reading.left <= 0) return { owner, limit: "budget" };
        readings?.push(reading);
      }
      const requests = rateLimit?.requests ?? null;
      if (requests !== null && this.#window(owner, "requests", requests.window, false, now).used >= requests.maxLimit) return { owner, limit: "requests" };
      const tokens = rateLimit?.tokens ?? null;
      if (tokens !== null) {
        const reading = this.#read(owner, "tokens", tokens, false, now);
        if (reading.left <= 0) return { owner, limit: "tokens" };
        readings?.push(reading);
      }
    }
    return null;
  }

  /** Keeps a window's counter as the owner's current one (`counter` may be the one already kept). */
  #keep(owner: LevelOwner, which: keyof Counters, counter: Counter): void {
    const id = this.#keysOf(owner).owner;
    const counters = this.#counters.get(id);
    if (counters === undefined) this.#counters.set(id, { budget: null, requests: null, tokens: null, [which]: counter });
    else counters[which] = counter;
  }

  /** The first level (most specific) whose budget or rate limit is exhausted, reservations included, or null. */
  exceeded(virtualKey: VirtualKey): LevelExceeded | null {
    if (this.#limitless(virtualKey)) return null;
    return this.#readChain(this.chain(virtualKey), this.#now(), null);
  }

  /**
   * Admits a request at every level or at none: counts it where requests are limited, and reserves its
   * worst-case cost and tokens (capped at what remains) until `settle`. Refused, naming the most specific
   * level, when a window has nothing left.
   */
  reserve(virtualKey: VirtualKey, worst: WorstCase): { hold: HierarchyHold } | LevelExceeded {
    const hold: HierarchyHold = { virtualKey, entries: [], counted: [], settled: false };
    if (this.#limitless(virtualKey)) return { hold };
    const now = this.#now();
    const chain = this.chain(virtualKey);
    const readings: Reading[] = [];
    const over = this.#readChain(chain, now, readings);
    if (over !== null) return over;
    // Decided before anything is counted, so a refusal leaves every level as it was.
    for (const { owner, which, left, pending } of readings) {
      if (left < (which === "budget" ? worst.costUsd : worst.tokens) && pending?.partial === true) return { owner, limit: which };
    }
    for (const owner of chain) {
      const requests = owner.rateLimit?.requests ?? null;
      if (requests !== null) hold.counted.push({ owner, start: this.#add(owner, "requests", requests.window, false, 1, now) });
    }
    // The windows read above are still as read: counting requests touched only the request windows.
    for (const { owner, which, window, pending, left } of readings) {
      // Kept from the moment a request reserves in it: a window nobody has spent in yet would otherwise start
      // at each asker's own `now`, and the reservations made in it before the first request settles would
      // never see each other.
      this.#keep(owner, which, window);
      const wanted = Math.max(0, which === "budget" ? worst.costUsd : worst.tokens);
      const held = Math.min(wanted, left);
      if (held <= 0) continue;
      const partial = held < wanted;
      this.#pending.set(this.#keysOf(owner)[which], { start: window.start, amount: (pending?.amount ?? 0) + held, partial: partial || pending?.partial === true });
      hold.entries.push({ owner, which, start: window.start, amount: held, partial });
    }
    return { hold };
  }

  /** Undoes a reservation of a request that was refused after all: it neither counts nor spends. */
  release(hold: HierarchyHold): void {
    if (hold.settled) return;
    for (const { owner, start } of hold.counted) {
      const counter = this.#counters.get(this.#keysOf(owner).owner)?.requests;
      if (counter && counter.start === start && counter.used >= 1) {
        counter.used -= 1;
        this.#revision += 1;
      }
    }
    this.settle(hold, 0, 0);
  }

  /** Ends a request's reservations and charges what it actually spent (once; later calls do nothing). */
  settle(hold: HierarchyHold, costUsd: number, tokens: number): void {
    if (hold.settled) return;
    hold.settled = true;
    for (const entry of hold.entries) {
      const id = this.#keysOf(entry.owner)[entry.which];
      const pending = this.#pending.get(id);
      if (pending === undefined || pending.start !== entry.start) continue;
      const amount = pending.amount - entry.amount;
      if (amount > 1e-12) this.#pending.set(id, { start: pending.start, amount, partial: pending.partial && !entry.partial });
      else this.#pending.delete(id);
    }
    this.charge(hold.virtualKey, costUsd, tokens);
  }

  /** Adds to a window; returns the window's start. */
  #add(owner: LevelOwner, which: keyof Counters, spec: WindowSpec, aligned: boolean, amount: number, now: number): number {
    const window = this.#window(owner, which, spec, aligned, now);
    this.#keep(owner, which, { start: window.start, used: window.used + amount });
    this.#revision += 1;
    return window.start;
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
    if (this.#limitless(virtualKey)) return;
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
