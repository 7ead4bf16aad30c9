/**
 * Admission of a request against the governance hierarchy's budgets and rate limits and those of the
 * provider config it is routed to: the node's own counters (which the usage API shows and the flusher
 * persists) and, on a cluster, the counters every node shares. A request reserves its count and its
 * worst-case cost and tokens before the upstream call and settles what it actually spent afterwards, so
 * concurrent requests cannot all pass the last unit of room.
 */
import type { HierarchyHold, Hierarchy, LevelExceeded, LevelOwner, WorstCase } from "./hierarchy.js";
import type { WindowSpec } from "./limit-window.js";
import type { LedgerHold, LedgerItem, SharedLedger } from "./shared-ledger.js";
import type { ProviderConfig, VirtualKey } from "./types.js";
import type { ConfigHold, LimitExceeded, UsageLimits } from "./usage-limits.js";

/** Which limit of the routed provider config refuses a request. */
export interface ConfigExceeded {
  config: ProviderConfig;
  limit: LimitExceeded;
}

/** What an admitted request holds until it settles. */
export interface LimitHold {
  local: HierarchyHold;
  /** What the request holds of its routed provider config's own counters, or null when the config limits nothing. */
  localConfig: ConfigHold | null;
  shared: LedgerHold | null;
  /** The provider whose config's shared counters the hold reserved in, or null. */
  provider: string | null;
}

/** Why a reservation was refused: a level of the hierarchy, or the routed provider config, has no room. */
export type Refusal = LevelExceeded | ConfigExceeded;

const CONFIG_PREFIX = "provider_config:";

/** The smallest cost reservation: a request of unknown price still needs some budget left. */
const MIN_COST = 1e-9;

function sharedKey(owner: LevelOwner, limit: LevelExceeded["limit"]): string {
  return `${owner.level}:${owner.id}:${limit}`;
}

/** A provider config's window of `ms` as a ledger window (rolling, from the first use in the cluster). */
function msWindow(ms: number): WindowSpec {
  return { count: ms / 1000, unit: "s", text: `${ms}ms` };
}

/** The shared counters of the provider config the request is routed to. */
function configItems(virtualKey: VirtualKey, config: ProviderConfig, worst: WorstCase, local: ConfigHold): LedgerItem<Refusal>[] {
  const base = `${CONFIG_PREFIX}${virtualKey.id}:${config.provider}`;
  // What the node's own counters let the request reserve: never more of the cluster's than of the node's.
  const localAmount = (slot: number | "tokens"): number | undefined => local.entries.find((e) => e.slot === slot)?.amount;
  const items: LedgerItem<Refusal>[] = config.budgets.map((budget, index) => ({
    key: `${base}:budget:${index}`,
    max: budget.maxLimit,
    window: msWindow(budget.resetDurationMs),
    calendarAligned: false,
    amount: Math.max(MIN_COST, localAmount(index) ?? worst.costUsd),
    whole: false,
    ref: { config, limit: "budget" },
  }));
  const rate = config.rateLimit;
  if (rate !== null) {
    items.push({
      key: `${base}:tokens`,
      max: rate.tokenMaxLimit,
      window: msWindow(rate.tokenResetDurationMs),
      calendarAligned: false,
      amount: Math.max(1, Math.ceil(localAmount("tokens") ?? worst.tokens)),
      whole: false,
      ref: { config, limit: "rate_limit" },
    });
  }
  return items;
}

/** What a request spent in a shared counter; a provider config's counters spend only when its provider answered. */
function spentIn(key: string, hold: LimitHold, costUsd: number, tokens: number, answered: string | null): number {
  if (key.startsWith(CONFIG_PREFIX)) {
    if (answered !== hold.provider) return 0;
    return key.endsWith(":tokens") ? tokens : costUsd;
  }
  return key.endsWith(":budget") ? costUsd : key.endsWith(":tokens") ? tokens : 1;
}

/** The shared counters a request of the key needs room in, most specific level first. */
function ledgerItems(hold: HierarchyHold, chain: readonly LevelOwner[], worst: WorstCase): LedgerItem<Refusal>[] {
  const items: LedgerItem<Refusal>[] = [];
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
  readonly #limits: UsageLimits;
  #ledger: SharedLedger | null = null;

  constructor(hierarchy: Hierarchy, limits: UsageLimits) {
    this.#hierarchy = hierarchy;
    this.#limits = limits;
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
   * Admits the request or names the most specific level (or the routed provider config) without room.
   * Synchronous unless the node must lease more of a shared counter. `config` is the provider config the
   * request is routed to; its counters are shared only on a cluster.
   */
  reserve(virtualKey: VirtualKey, worst: WorstCase, config: ProviderConfig | null = null): LimitHold | Refusal | Promise<LimitHold | Refusal> {
    const local = this.#hierarchy.reserve(virtualKey, worst);
    if (!("hold" in local)) return local;
    // A config without budgets or a token limit costs nothing here: most configs have none.
    const limited = config !== null && (config.budgets.length > 0 || config.rateLimit !== null) ? config : null;
    let localConfig: ConfigHold | null = null;
    if (limited !== null) {
      const reserved = this.#limits.reserve(virtualKey.id, limited, worst);
      if (typeof reserved === "string") {
        this.#hierarchy.release(local.hold);
        return { config: limited, limit: reserved };
      }
      localConfig = reserved;
    }
    const ledger = this.#ledger;
    if (ledger === null) return { local: local.hold, localConfig, shared: null, provider: null };
    const items = ledgerItems(local.hold, this.#hierarchy.chain(virtualKey), worst);
    const provider = limited?.provider ?? null;
    if (localConfig !== null && limited !== null) items.push(...configItems(virtualKey, limited, worst, localConfig));
    if (items.length === 0) return { local: local.hold, localConfig, shared: null, provider: null };
    const finish = (result: { hold: LedgerHold } | { refused: Refusal }): LimitHold | Refusal => {
      if ("hold" in result) return { local: local.hold, localConfig, shared: result.hold, provider };
      this.#hierarchy.release(local.hold);
      if (localConfig !== null) this.#limits.release(localConfig);
      return result.refused;
    };
    const shared = ledger.reserve(items);
    return shared instanceof Promise ? shared.then(finish) : finish(shared);
  }

  /**
   * Settles a hold with what the request spent; an unanswered request spends nothing. `answered` is the
   * provider that answered: when it is not the one reserved for, the answering config's shared counters
   * are charged what was spent without a reservation. Once per hold.
   */
  settle(hold: LimitHold, costUsd: number, tokens: number, answered: { virtualKeyId: string; config: ProviderConfig } | null = null): void {
    if (hold.local.settled) return;
    this.#hierarchy.settle(hold.local, costUsd, tokens);
    // The config's own counters get the actual spend from the caller's record(); here the reservation ends.
    if (hold.localConfig !== null) this.#limits.release(hold.localConfig);
    if (hold.shared === null) return;
    const provider = answered?.config.provider ?? null;
    this.#ledger?.settle(hold.shared, (key) => spentIn(key, hold, costUsd, tokens, provider));
    if (answered !== null && provider !== hold.provider) {
      const { virtualKeyId, config } = answered;
      const base = `${CONFIG_PREFIX}${virtualKeyId}:${config.provider}`;
      config.budgets.forEach((_, index) => this.#ledger?.charge(`${base}:budget:${index}`, costUsd));
      if (config.rateLimit !== null) this.#ledger?.charge(`${base}:tokens`, tokens);
    }
  }
}
