/**
 * The in-memory inference state the /v1 hot path reads: one adapter per provider with its keys and call
 * limit, the model catalog, the virtual-key registry and the usage counters. Admin writes and the boot load
 * update it in place, so a request never awaits the database; readers look fields up per request, never
 * cache them.
 */
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { CallLimiter } from "../providers/call-limiter.js";
import type { PreconnectFailure } from "../providers/http/upstream-pool.js";
import { createProviderAdapter } from "../providers/registry.js";
import type { ProviderAdapter, ProviderConfig as ProviderSetup, ProviderKey } from "../providers/types.js";
import { createKeyCatalog, type ModelCatalog } from "../routing/model-catalog.js";
import { PriceTable } from "../routing/pricing.js";
import type { PriceEntry } from "../routing/pricing-data.js";
import { RoutingLog } from "../telemetry/routing-log.js";
import { UsageHistory } from "../telemetry/usage-history.js";
import { Hierarchy } from "../routing/hierarchy.js";
import { LimitGate } from "../routing/limit-gate.js";
import { RouteHealth } from "../routing/route-health.js";
import { RoutingRuleSet } from "../routing/routing-rules.js";
import { SessionAffinity } from "../routing/session-affinity.js";
import type { Clock, Random, VirtualKey } from "../routing/types.js";
import { UsageLimits } from "../routing/usage-limits.js";
import { KeyBackoffs } from "../routing/key-backoffs.js";
import { VirtualKeyRegistry } from "../routing/virtual-key-registry.js";
import type { Logger } from "../telemetry/logger.js";
import type { RouteStateSample } from "../telemetry/metrics.js";

/** The most upstream calls a provider runs at once, and how many requests may wait for one. */
export interface CallLimit {
  concurrency: number;
  bufferSize: number;
}

/** A provider's configuration as the hot path takes it (the admin API and the config file parse it). */
export interface ProviderSettings {
  setup: ProviderSetup;
  /** default_request_timeout_in_seconds in ms; null = the gateway default. */
  timeoutMs: number | null;
  /** stream_idle_timeout_in_seconds in ms, the gateway default applied. */
  idleTimeoutMs: number;
  /** max_response_bytes, the gateway default applied. */
  maxResponseBytes: number;
  /** concurrency_and_buffer_size; null = no limit. */
  limit: CallLimit | null;
}

/** One provider as the hot path uses it. */
export interface InferenceProvider {
  adapter: ProviderAdapter;
  keys: readonly ProviderKey[];
  /** The provider's own request timeout (network_config), or null for the gateway default. */
  timeoutMs: number | null;
  /** Its stream idle timeout (network_config), defaults applied. */
  idleTimeoutMs: number;
  /** Its response size cap (network_config), defaults applied. */
  maxResponseBytes: number;
  /** Its concurrency_and_buffer_size slots, or null when its calls are not limited. */
  limiter: CallLimiter | null;
  /** network_config.base_url, or null for the adapter's default: calls no adapter makes (a moderation check) go there. */
  baseUrl?: string | null;
}

/** What the hot path reads. */
export interface Inference {
  readonly providers: ReadonlyMap<string, InferenceProvider>;
  readonly catalog: ModelCatalog;
  readonly virtualKeys: VirtualKeyRegistry;
  /** Compiled routing rules, evaluated before a key's provider_configs. */
  readonly routingRules: RoutingRuleSet;
  /** The last routing decisions. */
  readonly routingLog: RoutingLog;
  /** Business units, customers and teams, with every level's limits and counters. */
  readonly hierarchy: Hierarchy;
  /** Reserves and settles each request's room in the hierarchy's budgets and rate limits (shared on a cluster). */
  readonly gate: LimitGate;
  readonly limits: UsageLimits;
  /** Prices of models, for the cost budgets spend. */
  readonly prices: PriceTable;
  readonly random: Random;
  readonly upstreamTimeoutMs: number | undefined;
  /** This node's statistics and health state of every provider and key route (adaptive load balancing). */
  readonly routeHealth: RouteHealth;
  /** The provider and key that last served each session (x-gw-session-id or the MCP session header). */
  readonly affinity: SessionAffinity;
  /** Per-minute request totals, counted on the request path and written by the usage flush. */
  readonly usageHistory: UsageHistory;
  /** Provider keys an upstream told to wait (429 with retry-after); shared on a cluster. */
  readonly keyBackoffs: KeyBackoffs;
}

/** The live state with the operations admin writes use. */
export class InferenceState implements Inference {
  readonly #providers = new Map<string, InferenceProvider>();
  readonly #listed = new Map<string, readonly string[]>();
  #catalog: ModelCatalog = createKeyCatalog(new Map());
  readonly virtualKeys = new VirtualKeyRegistry();
  readonly routingRules = new RoutingRuleSet();
  readonly routingLog = new RoutingLog();
  readonly usageHistory = new UsageHistory();
  readonly hierarchy: Hierarchy;
  readonly gate: LimitGate;
  readonly limits: UsageLimits;
  #prices = new PriceTable();
  /** Provider -> models the pricing datasheet prices for it, part of the catalog's pool. */
  #priced = new Map<string, readonly string[]>();
  readonly random: Random;
  /** The clock the usage windows follow. */
  readonly clock: Clock;
  readonly upstreamTimeoutMs: number | undefined;
  readonly routeHealth: RouteHealth;
  readonly affinity: SessionAffinity;
  readonly keyBackoffs: KeyBackoffs;
  /** client.initial_pool_size is read from here when a provider is loaded; without settings nothing is pre-opened. */
  readonly #settings: RuntimeSettings | undefined;
  readonly #logger: Logger | undefined;

  constructor(options: { random?: Random; upstreamTimeoutMs?: number; clock?: Clock; settings?: RuntimeSettings; logger?: Logger } = {}) {
    this.random = options.random ?? Math.random;
    this.clock = options.clock ?? Date.now;
    this.upstreamTimeoutMs = options.upstreamTimeoutMs;
    this.limits = new UsageLimits(options.clock);
    this.hierarchy = new Hierarchy(options.clock);
    this.gate = new LimitGate(this.hierarchy, this.limits);
    this.#settings = options.settings;
    this.#logger = options.logger;
    this.affinity = new SessionAffinity(options.clock);
    this.keyBackoffs = new KeyBackoffs(options.clock);
    this.routeHealth = new RouteHealth({
      ...(options.clock ? { clock: options.clock } : {}),
      onChange: (change) => this.#logger?.info({ provider: change.provider, key_id: change.keyId, from: change.from, to: change.to, reason: change.reason }, `route ${change.provider}${change.keyId === "" ? "" : `/${change.keyId}`} is now ${change.to}: ${change.reason}`),
    });
  }

  get providers(): ReadonlyMap<string, InferenceProvider> {
    return this.#providers;
  }

  get catalog(): ModelCatalog {
    return this.#catalog;
  }

  get prices(): PriceTable {
    return this.#prices;
  }

  /** Replaces the prices and the models the datasheet adds to the catalog's pool. */
  setPrices(table: PriceTable, entries: readonly PriceEntry[]): void {
    const priced = new Map<string, string[]>();
    for (const entry of entries) {
      const models = priced.get(entry.provider);
      if (models === undefined) priced.set(entry.provider, [entry.model]);
      else models.push(entry.model);
    }
    this.#prices = table;
    this.#priced = priced;
    this.#rebuildCatalog();
  }

  /**
   * Adds or replaces a provider and opens its client.initial_pool_size connections; the old adapter's pools
   * close once their requests finish. Requests already holding or awaiting a slot of the old limit keep it.
   */
  putProvider(parsed: ProviderSettings): void {
    const name = parsed.setup.name;
    const old = this.#providers.get(name);
    const adapter = createProviderAdapter(parsed.setup);
    const limiter = parsed.limit === null ? null : new CallLimiter(name, parsed.limit.concurrency, parsed.limit.bufferSize);
    this.#providers.set(name, { adapter, keys: parsed.setup.keys, timeoutMs: parsed.timeoutMs, idleTimeoutMs: parsed.idleTimeoutMs, maxResponseBytes: parsed.maxResponseBytes, limiter, baseUrl: parsed.setup.baseUrl });
    this.#rebuildCatalog();
    if (old) void old.adapter.close();
    const connections = this.#settings?.client.initialPoolSize ?? 0;
    if (connections > 0) void adapter.preconnect(connections).then((failures) => this.#reportPreconnect(name, failures));
  }

  /** A failed pre-open only costs the first requests a connection set-up, so it is worth a debug line at most. */
  #reportPreconnect(provider: string, failures: readonly PreconnectFailure[]): void {
    const byOrigin = new Map<string, { failed: number; err: unknown }>();
    for (const { origin, error } of failures) {
      const seen = byOrigin.get(origin);
      if (seen) seen.failed++;
      else byOrigin.set(origin, { failed: 1, err: error });
    }
    for (const [origin, { failed, err }] of byOrigin) {
      this.#logger?.debug({ provider, origin, failed, err }, "could not pre-open some upstream connections (client.initial_pool_size); requests open their own");
    }
  }

  /** Removes a provider and its listed models. */
  removeProvider(name: string): void {
    const old = this.#providers.get(name);
    this.#providers.delete(name);
    this.#listed.delete(name);
    this.routeHealth.forget(name);
    this.#rebuildCatalog();
    if (old) void old.adapter.close();
  }

  /** Sets the models the provider's list-models API reported (empty clears them). */
  setListedModels(name: string, models: readonly string[]): void {
    if (models.length === 0) this.#listed.delete(name);
    else this.#listed.set(name, [...models]);
    this.#rebuildCatalog();
  }

  /** The listed models of a provider. */
  listedModels(name: string): readonly string[] {
    return this.#listed.get(name) ?? [];
  }

  /** Adds or replaces a virtual key. */
  putVirtualKey(key: VirtualKey): void {
    this.virtualKeys.put(key);
  }

  /** Removes a virtual key and its counters. */
  removeVirtualKey(id: string): void {
    this.virtualKeys.remove(id);
    this.limits.forget(id);
    this.hierarchy.remove("virtual_key", id);
  }

  #rebuildCatalog(): void {
    const keys = new Map([...this.#providers].map(([name, provider]) => [name, provider.keys] as const));
    this.#catalog = createKeyCatalog(keys, undefined, this.#listed, this.#priced);
  }

  /** Every route the load balancer knows, with the key's configured name (empty for a provider route or a removed key). */
  *routeStates(): IterableIterator<RouteStateSample> {
    for (const route of this.routeHealth.routes()) {
      const keyName = route.keyId === "" ? "" : (this.#providers.get(route.provider)?.keys.find((key) => key.id === route.keyId)?.name ?? "");
      yield { provider: route.provider, keyId: route.keyId, keyName, state: route.state };
    }
  }

  /** Closes every adapter's keep-alive pools. */
  async close(): Promise<void> {
    await Promise.all([...this.#providers.values()].map((provider) => provider.adapter.close()));
  }
}
