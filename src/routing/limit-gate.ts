/**
 * Admission of a request against the governance hierarchy's budgets and rate limits: the node's own
 * counters (which the usage API shows and the flusher persists) and, on a cluster, the counters every node
 * shares. A request reserves its count and its worst-case cost and tokens before the upstream call and
 * settles what it actually spent afterwards, so concurrent requests cannot all pass the last unit of room.
 */
import type { HierarchyHold, Hierarchy, LevelExceeded, LevelOwner, WorstCase } from "./hierarchy.js";
import type { LedgerHold, LedgerItem, SharedLedger } from "./shared-ledger.js";
import type { VirtualKey } from "./types.js";

/** What an admitted request holds until it settles. */
export interface LimitHold {
  local: HierarchyHold;
  shared: LedgerHold | null;
}

/** The smallest cost reservation: a request of unknown price still needs some budget left. */
const MIN_COST = 1e-9;

function sharedKey(owner: LevelOwner, limit: LevelExceeded["limit"]): string {
  return `${owner.level}:${owner.id}:${limit}`;
}

/** The shared counters a request of the key needs room in, most specific level first. */
function ledgerItems(hold: HierarchyHold, chain: readonly LevelOwner[], worst: WorstCase): LedgerItem<LevelExceeded>[] {
  const items: LedgerItem<LevelExceeded>[] = [];
  for (const owner of chain) {
    const requests = owner.rateLimit?.requests ?? null;
    if (requests !== null) {
      items.push({ key: sharedKey(owner, "requests"), max: requests.maxLimit, window: requests.window, calendarAligned: false, amount: 1, whole: true, ref: { owner, limit: "requests" } });
    }
    const localAmount = (which: "budget" | "tokens"): number | undefined => hold.entries.find((e) => e.owner === owner && e.which === which)?.amount;
    if (owner.budget !== null) {
      const amount = Math.max(MIN_COST, localAmount("budget") ?? worst.costUsd);
      items.push({ key: sharedKey(owner, "budget"), max: owner.budget.maxLimit, window: owner.budget.window, calendarAligned: owner.budget.calendarAligned, amount, whole: false, ref: { owner, limit: "budget" } });
    }
    const tokens = owner.rateLimit?.tokens ?? null;
    if (tokens !== null) {
      const amount = Math.max(1, Math.ceil(localAmount("tokens") ?? worst.tokens));
      items.push({ key: sharedKey(owner, "tokens"), max: tokens.maxLimit, window: tokens.window, calendarAligned: false, amount, whole: false, ref: { owner, limit: "tokens" } });
    }
  }
  return items;
}

/** Reserves and settles a request's room at every level of the hierarchy. */
export class LimitGate {
  readonly #hierarchy: Hierarchy;
  #ledger: SharedLedger | null = null;

  constructor(hierarchy: Hierarchy) {
    this.#hierarchy = hierarchy;
  }

  /** Turns the shared counters on (a cluster on a database server) or off. */
  share(ledger: SharedLedger | null): void {
    this.#ledger = ledger;
  }

  /** The shared counters, when they are on. */
  get ledger(): SharedLedger | null {
    return this.#ledger;
  }

  /**
   * Admits the request or names the most specific level without room. Synchronous unless the node must
   * lease more of a shared counter.
   */
  reserve(virtualKey: VirtualKey, worst: WorstCase): LimitHold | LevelExceeded | Promise<LimitHold | LevelExceeded> {
    const local = this.#hierarchy.reserve(virtualKey, worst);
    if (!("hold" in local)) return local;
    const ledger = this.#ledger;
    if (ledger === null) return { local: local.hold, shared: null };
    const items = ledgerItems(local.hold, this.#hierarchy.chain(virtualKey), worst);
    if (items.length === 0) return { local: local.hold, shared: null };
    const finish = (result: { hold: LedgerHold } | { refused: LevelExceeded }): LimitHold | LevelExceeded => {
      if ("hold" in result) return { local: local.hold, shared: result.hold };
      this.#hierarchy.release(local.hold);
      return result.refused;
    };
    const shared = ledger.reserve(items);
    return shared instanceof Promise ? shared.then(finish) : finish(shared);
  }

  /** Settles a hold with what the request spent; an unanswered request spends nothing. Once per hold. */
  settle(hold: LimitHold, costUsd: number, tokens: number): void {
    if (hold.local.settled) return;
    this.#hierarchy.settle(hold.local, costUsd, tokens);
    if (hold.shared !== null) {
      this.#ledger?.settle(hold.shared, (key) => (key.endsWith(":budget") ? costUsd : key.endsWith(":tokens") ? tokens : 1));
    }
  }
}
