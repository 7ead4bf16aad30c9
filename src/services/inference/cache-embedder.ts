/**
 * The semantic cache's embeddings: the question goes to the embeddings API of the configured provider and
 * model, through one of that provider's keys, as an embeddings request of the gateway's own would.
 */
import { GatewayError } from "../../errors.js";
import { orderKeys } from "../../routing/key-selection.js";
import type { Embedder } from "./response-cache.js";
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

/** An embedder over the live inference state (providers and keys may change while it runs). */
export function createProviderEmbedder(inference: Inference, target: EmbeddingTarget): Embedder {
  return async (text, signal) => {
    const provider = inference.providers.get(target.provider);
    if (provider === undefined) {
      throw new GatewayError("failed_precondition", `cache.embedding.provider "${target.provider}" is not configured; add it under providers`);
    }
    const [choice] = orderKeys({ provider: target.provider, model: target.model, keys: provider.keys, config: null, catalog: inference.catalog, random: inference.random });
    const key = provider.keys.find((candidate) => candidate.id === choice?.key.id);
    if (choice === undefined || key === undefined) throw new GatewayError("failed_precondition", `no key of provider "${target.provider}" serves the embedding model "${target.model}"`);
    const timeoutMs = provider.timeoutMs ?? inference.upstreamTimeoutMs;
    const result = await provider.adapter.embeddings({ model: choice.upstreamModel, input: text }, { key, signal, ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
    const embedding = firstEmbedding(result.body);
    if (embedding === null) throw new GatewayError("unavailable", `the embeddings answer of ${target.provider}/${target.model} holds no embedding`);
    return embedding;
  };
}
