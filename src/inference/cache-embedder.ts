/**
 * The semantic cache's embeddings: the question goes to the embeddings API of the configured provider and
 * model (or, without one, the default embedding model the catalog offers), through one of that provider's
 * keys, as an embeddings request of the gateway's own would.
 */
import { GatewayError } from "../errors.js";
import type { ProviderKey } from "../providers/types.js";
import { keyAllowsModel } from "../routing/allowed-models.js";
import { orderKeys } from "../routing/key-selection.js";
import type { ModelCatalog } from "../routing/model-catalog.js";
import type { PriceTable } from "../routing/pricing.js";
import { NO_EMBEDDING_MODEL, type Embedder } from "./response-cache.js";
import type { Inference } from "./state.js";

/** The provider and model that embed questions. */
export interface EmbeddingTarget {
  provider: string;
  model: string;
}

/** The first embedding of an OpenAI embeddings list, or null when the answer holds none. */
function firstEmbedding(body: Record<string, unknown>): number[] | null {
  const data = body["data"];
  if (!Array.isArray(data)) return null;
  const first: unknown = data[0];
  if (first === null || typeof first !== "object") return null;
  const embedding = (first as Record<string, unknown>)["embedding"];
  return Array.isArray(embedding) && embedding.length > 0 && embedding.every((v) => typeof v === "number" && Number.isFinite(v)) ? (embedding as number[]) : null;
}

/**
 * The embedding model used when cache.embedding is not set: of the configured providers in name order, the
 * first whose catalog has an embedding model (one the price list prices in embedding mode) that one of its
 * keys serves, with its cheapest such model (by input price, then by name). Null when no provider has one.
 */
export function defaultEmbeddingTarget(inference: {
  providers: ReadonlyMap<string, { keys: readonly ProviderKey[] }>;
  catalog: ModelCatalog;
  prices: PriceTable;
}): EmbeddingTarget | null {
  for (const name of [...inference.providers.keys()].sort()) {
    const keys = inference.providers.get(name)?.keys ?? [];
    let best: { model: string; cost: number } | null = null;
    for (const model of inference.catalog.modelsOf(name)) {
      const price = inference.prices.lookup(name, model, "embedding");
      if (price === null || !keys.some((key) => keyAllowsModel(key, model))) continue;
      const cost = price.input_cost_per_token;
      if (best === null || cost < best.cost || (cost === best.cost && model < best.model)) best = { model, cost };
    }
    if (best !== null) return { provider: name, model: best.model };
  }
  return null;
}

/**
 * An embedder over the live inference state (providers and keys may change while it runs). Without a
 * `target` it embeds with the default embedding model, found again only when the catalog or the prices change.
 */
export function createProviderEmbedder(inference: Inference, target: EmbeddingTarget | null): Embedder {
  let resolvedFor: { catalog: ModelCatalog; prices: PriceTable; target: EmbeddingTarget | null } | null = null;
  const current = (): EmbeddingTarget | null => {
    if (target !== null) return target;
    if (resolvedFor === null || resolvedFor.catalog !== inference.catalog || resolvedFor.prices !== inference.prices) {
      resolvedFor = { catalog: inference.catalog, prices: inference.prices, target: defaultEmbeddingTarget(inference) };
    }
    return resolvedFor.target;
  };
  return {
    available: () => current() !== null,
    embed: async (text, signal) => {
      const chosen = current();
      if (chosen === null) throw new GatewayError("failed_precondition", NO_EMBEDDING_MODEL);
      const provider = inference.providers.get(chosen.provider);
      if (provider === undefined) {
        throw new GatewayError("failed_precondition", `cache.embedding.provider "${chosen.provider}" is not configured; add it under providers`);
      }
      const [choice] = orderKeys({ provider: chosen.provider, model: chosen.model, keys: provider.keys, config: null, catalog: inference.catalog, random: inference.random });
      const key = provider.keys.find((candidate) => candidate.id === choice?.key.id);
      if (choice === undefined || key === undefined) throw new GatewayError("failed_precondition", `no key of provider "${chosen.provider}" serves the embedding model "${chosen.model}"`);
      const timeoutMs = provider.timeoutMs ?? inference.upstreamTimeoutMs;
      const result = await provider.adapter.embeddings({ model: choice.upstreamModel, input: text }, { key, signal, ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
      const embedding = firstEmbedding(result.body);
      if (embedding === null) throw new GatewayError("unavailable", `the embeddings answer of ${chosen.provider}/${chosen.model} holds no embedding`);
      return embedding;
    },
  };
}

