/**
 * The catalog interface routing asks "which models does a provider have" and "which providers serve a
 * model", and the interim implementation over provider keys plus the bundled table. The real model catalog
 * (pricing data and list-models) will implement the same interface.
 */
import { BUNDLED_MODELS } from "./bundled-models.js";
import type { ProviderKey } from "./types.js";

/** Read-only model knowledge routing depends on. */
export interface ModelCatalog {
  /** Model ids the catalog knows for a provider (empty when it knows none). */
  modelsOf(provider: string): readonly string[];
  /** Whether modelsOf(provider) includes the model; a set lookup, for the request path. */
  hasModel(provider: string, model: string): boolean;
  /** Configured providers that serve the model, in preference order. */
  providersOf(model: string): readonly string[];
  /** Whether the name is a provider the gateway knows (used to split `provider/model`). */
  isProvider(name: string): boolean;
}

/**
 * Builds the interim catalog: each configured provider's keys' models and alias names, the models its
 * list-models API reported, plus the bundled table.
 */
export function createKeyCatalog(
  keysByProvider: ReadonlyMap<string, readonly ProviderKey[]>,
  bundled: Readonly<Record<string, readonly string[]>> = BUNDLED_MODELS,
  listed: ReadonlyMap<string, readonly string[]> = new Map(),
): ModelCatalog {
  const pool = new Map<string, readonly string[]>();
  const poolSets = new Map<string, ReadonlySet<string>>();
  for (const [provider, keys] of keysByProvider) {
    const models = new Set<string>(Object.hasOwn(bundled, provider) ? bundled[provider] : []);
    for (const model of listed.get(provider) ?? []) models.add(model);
    for (const key of keys) {
      for (const model of key.models) if (model !== "*") models.add(model);
      for (const alias of Object.keys(key.aliases)) models.add(alias);
    }
    pool.set(provider, [...models]);
    poolSets.set(provider, models);
  }
  const bundledSets = new Map(Object.entries(bundled).map(([provider, models]) => [provider, new Set(models)]));
  return {
    modelsOf: (provider) => pool.get(provider) ?? (Object.hasOwn(bundled, provider) ? bundled[provider] ?? [] : []),
    hasModel: (provider, model) => (poolSets.get(provider) ?? bundledSets.get(provider))?.has(model) ?? false,
    providersOf: (model) => [...pool].filter(([, models]) => models.includes(model)).map(([provider]) => provider),
    isProvider: (name) => pool.has(name) || Object.hasOwn(bundled, name),
  };
}
