/**
 * The model catalog routing reads: a pool of models per configured provider, built from the pricing
 * datasheet, each provider's list-models answer, its keys' models and alias names, and a small bundled
 * table. Bare model names resolve to providers with these lookup rules, in this order: a direct match
 * in the pool; then cross-provider resolution through an aggregator that lists `<vendor>/<model>`, a
 * multi-vendor cloud that lists `<vendor>/<model>`, a fast-inference provider that lists
 * `<vendor>/<model>` for the vendor's models, and a cloud model host whose ids contain
 * `<vendor>.<model>`. A cross-provider candidate carries the provider's own id for the model, which is
 * what the upstream receives.
 */
import { boundedCache } from "../bounded-cache.js";
import { BUNDLED_MODELS } from "./bundled-models.js";
import type { ProviderKey } from "./types.js";

/** Which lookup rule found a candidate. */
export type CatalogRule = "direct" | "aggregator" | "multi_vendor_cloud" | "fast_inference" | "cloud_host";

/** A provider that serves a model, and the id it serves it under. */
export interface CatalogCandidate {
  provider: string;
  /** The provider's own id: the requested name for a direct match, e.g. `openai/gpt-4o` through an aggregator. */
  model: string;
  rule: CatalogRule;
}

/** Read-only model knowledge routing depends on. */
export interface ModelCatalog {
  /** Model ids the catalog knows for a provider (empty when it knows none). */
  modelsOf(provider: string): readonly string[];
  /** Whether the provider serves the model, directly or by cross-provider resolution; for the request path. */
  hasModel(provider: string, model: string): boolean;
  /** Configured providers that serve the model, in the lookup rules' order. */
  providersOf(model: string): readonly string[];
  /** Every candidate of the model, in the lookup rules' order, one per provider. */
  candidatesOf(model: string): readonly CatalogCandidate[];
  /** The id `provider` serves `model` under (the name itself when it has no other). */
  idAt(provider: string, model: string): string;
  /** Whether the name is a provider the gateway knows (used to split `provider/model`). */
  isProvider(name: string): boolean;
}

/** Providers that resell many vendors' models under `<vendor>/<model>` ids. */
const AGGREGATORS: ReadonlySet<string> = new Set(["openrouter"]);
/** Clouds hosting several vendors' models, listed as `<vendor>/<model>`. */
const MULTI_VENDOR_CLOUDS: ReadonlySet<string> = new Set(["vertex"]);
/** Fast-inference hosts serving open models under the vendor's `<vendor>/<model>` id. */
const FAST_INFERENCE: ReadonlySet<string> = new Set(["groq", "cerebras", "sambanova"]);
/** Cloud model hosts whose ids embed `<vendor>.<model>` (`us.anthropic.claude-...-v1:0`). */
const CLOUD_HOSTS: ReadonlySet<string> = new Set(["bedrock"]);

/** The id under which `pool` lists `model` with a single `<vendor>/` segment, or null. */
function vendorPrefixed(pool: readonly string[], model: string): string | null {
  const suffix = `/${model}`;
  return pool.find((id) => id.endsWith(suffix) && id.indexOf("/") === id.length - suffix.length) ?? null;
}

/** The shortest id in `pool` containing `<vendor>.<model>`, or null (shortest: the closest version). */
function dottedMatch(pool: readonly string[], model: string): string | null {
  let best: string | null = null;
  const needle = `.${model}`;
  for (const id of pool) {
    const at = id.indexOf(needle);
    // A vendor segment (letters, digits, dashes) right before the dot.
    if (at > 0 && /[a-z0-9-]$/i.test(id.slice(0, at)) && (best === null || id.length < best.length)) best = id;
  }
  return best;
}

/** Model names whose candidates one catalog keeps. */
const MAX_RESOLVED = 10_000;

/** Cross-provider rules in lookup order, each with the providers it applies to and its matcher. */
const CROSS_RULES: readonly { rule: CatalogRule; providers: ReadonlySet<string>; match: (pool: readonly string[], model: string) => string | null }[] = [
  { rule: "aggregator", providers: AGGREGATORS, match: vendorPrefixed },
  { rule: "multi_vendor_cloud", providers: MULTI_VENDOR_CLOUDS, match: vendorPrefixed },
  { rule: "fast_inference", providers: FAST_INFERENCE, match: vendorPrefixed },
  { rule: "cloud_host", providers: CLOUD_HOSTS, match: dottedMatch },
];

/**
 * Builds the catalog of the configured providers: each one's bundled models, listed models, priced
 * models, and its keys' models and alias names.
 */
export function createKeyCatalog(
  keysByProvider: ReadonlyMap<string, readonly ProviderKey[]>,
  bundled: Readonly<Record<string, readonly string[]>> = BUNDLED_MODELS,
  listed: ReadonlyMap<string, readonly string[]> = new Map(),
  priced: ReadonlyMap<string, readonly string[]> = new Map(),
): ModelCatalog {
  const pool = new Map<string, readonly string[]>();
  const poolSets = new Map<string, ReadonlySet<string>>();
  for (const [provider, keys] of keysByProvider) {
    const models = new Set<string>(Object.hasOwn(bundled, provider) ? bundled[provider] : []);
    for (const model of priced.get(provider) ?? []) models.add(model);
    for (const model of listed.get(provider) ?? []) models.add(model);
    for (const key of keys) {
      for (const model of key.models) if (model !== "*") models.add(model);
      for (const alias of Object.keys(key.aliases)) models.add(alias);
    }
    pool.set(provider, [...models]);
    poolSets.set(provider, models);
  }
  const bundledSets = new Map(Object.entries(bundled).map(([provider, models]) => [provider, new Set(models)]));
  // Resolution walks every pool; requests repeat the same few names, so answers are kept (bounded).
  const resolved = boundedCache<string, readonly CatalogCandidate[]>(MAX_RESOLVED);

  function resolve(model: string): readonly CatalogCandidate[] {
    const known = resolved.get(model);
    if (known !== undefined) return known;
    const out: CatalogCandidate[] = [];
    for (const [provider, models] of poolSets) if (models.has(model)) out.push({ provider, model, rule: "direct" });
    for (const { rule, providers, match } of CROSS_RULES) {
      for (const provider of providers) {
        const models = pool.get(provider);
        if (models === undefined || out.some((c) => c.provider === provider)) continue;
        const id = match(models, model);
        if (id !== null) out.push({ provider, model: id, rule });
      }
    }
    resolved.set(model, out);
    return out;
  }

  return {
    modelsOf: (provider) => pool.get(provider) ?? (Object.hasOwn(bundled, provider) ? bundled[provider] ?? [] : []),
    hasModel: (provider, model) => {
      const direct = (poolSets.get(provider) ?? bundledSets.get(provider))?.has(model) ?? false;
      return direct || resolve(model).some((c) => c.provider === provider);
    },
    providersOf: (model) => resolve(model).map((c) => c.provider),
    candidatesOf: resolve,
    idAt: (provider, model) => resolve(model).find((c) => c.provider === provider)?.model ?? model,
    isProvider: (name) => pool.has(name) || Object.hasOwn(bundled, name),
  };
}
