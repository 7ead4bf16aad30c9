/**
 * The routing layer's own view of virtual keys and provider keys. The store and the providers layer map
 * their records onto these shapes, so routing stays free of database, HTTP and proto types.
 */

import type { LevelBudget, LevelRateLimit } from "./hierarchy.js";

/** One spending window of a provider config: at most `maxLimit` USD per `resetDurationMs`. */
export interface Budget {
  maxLimit: number;
  /** Window length; zero or less means the window never resets. */
  resetDurationMs: number;
}

/** Token allowance of a provider config: at most `tokenMaxLimit` tokens per `tokenResetDurationMs`. */
export interface RateLimit {
  tokenMaxLimit: number;
  /** Window length; zero or less means the window never resets. */
  tokenResetDurationMs: number;
}

/** What a virtual key may use of one provider. */
export interface ProviderConfig {
  provider: string;
  /** ["*"] = every model the catalog knows for the provider, [] = none, otherwise an exact list. */
  allowedModels: readonly string[];
  /** ["*"] = every key of the provider, [] = every key blocked, otherwise key ids. */
  keyIds: readonly string[];
  /** Finite and >= 0; relative share in weighted random selection. */
  weight: number;
  budgets: readonly Budget[];
  rateLimit: RateLimit | null;
}

/** MCP tools a virtual key may use (carried through; routing does not read it). */
export interface McpConfig {
  mcpClientName: string;
  toolsToExecute: readonly string[];
}

/** How a request's answer may come from the response cache. */
export type CacheMode = "off" | "direct" | "semantic";

/** A virtual key's response cache (carried through; routing does not read it). */
export interface CacheSettings {
  mode: CacheMode;
  /** How long an answer stays cached. */
  ttlMs: number;
  /** The least cosine similarity a semantic hit needs, in (0, 1]. */
  threshold: number;
}

/** A caller credential with its governance rules. */
export interface VirtualKey {
  id: string;
  name: string;
  value: string;
  isActive: boolean;
  providerConfigs: readonly ProviderConfig[];
  /** null: not set, the key sees every client a caller without a key sees; [] none. */
  mcpConfigs: readonly McpConfig[] | null;
  /** "" when the key belongs to no team. */
  teamId: string;
  /** "" when the key names no customer (it may still have one through its team). */
  customerId: string;
  /** The key's own limits over every provider. */
  budget: LevelBudget | null;
  rateLimit: LevelRateLimit | null;
  /** The key's response cache; absent, caching is off unless a request asks for it. */
  cache?: CacheSettings;
}

/** One upstream credential of a provider (the secret value is not routing's business). */
export interface ProviderKey {
  id: string;
  name: string;
  /** Allowlist of model ids; [] or ["*"] restricts nothing (see allowedModelsOfKey). */
  models: readonly string[];
  /** User-facing name -> provider-specific model id. */
  aliases: Readonly<Record<string, string>>;
  weight: number;
}

/** A provider and a model, the unit routing hands to the providers layer. */
export interface RouteTarget {
  provider: string;
  /** The model as the caller named it (possibly an alias); the key decides the upstream id. */
  model: string;
  /** A provider key a routing rule's fallback pinned for this target; absent lets key selection choose. */
  keyId?: string;
}

/** Routing engines named in the `routing_engine_used` label. */
export type RoutingEngine = "routing-rule" | "governance" | "loadbalancing" | "model-catalog";

/** Returns a number in [0, 1); Math.random in production, a seeded generator in tests. */
export type Random = () => number;

/** Milliseconds since the epoch; Date.now in production, a fake clock in tests. */
export type Clock = () => number;
