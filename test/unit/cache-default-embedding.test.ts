/** The semantic cache's default embedding model: the cheapest embedding model of the first provider (by name) whose keys serve one. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ProviderKey } from "../../src/providers/types.js";
import { createKeyCatalog } from "../../src/routing/model-catalog.js";
import { PriceTable } from "../../src/routing/pricing.js";
import type { PriceEntry } from "../../src/routing/pricing-data.js";
import { defaultEmbeddingTarget } from "../../src/inference/cache-embedder.js";
import { providerKey } from "../helpers/provider-keys.js";

function entry(provider: string, model: string, mode: string, inputCost: number): PriceEntry {
  return { provider, model, mode, input_cost_per_token: inputCost, output_cost_per_token: 0 };
}

/** An inference view of the given providers and keys over a price list. */
function inference(keys: Record<string, ProviderKey[]>, entries: PriceEntry[]) {
  const priced = new Map<string, string[]>();
  for (const e of entries) priced.set(e.provider, [...(priced.get(e.provider) ?? []), e.model]);
  const providers = new Map(Object.entries(keys).map(([name, list]) => [name, { keys: list }] as const));
  return { providers, catalog: createKeyCatalog(new Map(Object.entries(keys)), {}, new Map(), priced), prices: PriceTable.fromEntries(entries) };
}

const PRICES = [
  entry("acme", "acme-chat", "chat", 1e-6),
  entry("openai", "embed-large", "embedding", 13e-8),
  entry("openai", "embed-small", "embedding", 2e-8),
  entry("openai", "gpt-cheap", "chat", 1e-9),
  entry("zeta", "zeta-embed", "embedding", 1e-9),
];

test("the cheapest embedding model of the provider is chosen, never a cheaper chat model", () => {
  assert.deepEqual(defaultEmbeddingTarget(inference({ openai: [providerKey()] }, PRICES)), { provider: "openai", model: "embed-small" });
});

test("the first provider by name that has an embedding model wins over a cheaper one later", () => {
  const view = inference({ zeta: [providerKey()], acme: [providerKey()], openai: [providerKey()] }, PRICES);
  assert.deepEqual(defaultEmbeddingTarget(view), { provider: "openai", model: "embed-small" });
});

test("an embedding model no key of the provider serves is passed over", () => {
  const view = inference({ openai: [providerKey({ models: ["gpt-cheap", "embed-large"] })] }, PRICES);
  assert.deepEqual(defaultEmbeddingTarget(view), { provider: "openai", model: "embed-large" });
});

test("there is no default when no provider's keys serve an embedding model", () => {
  const view = inference({ acme: [providerKey()], openai: [providerKey({ models: ["gpt-cheap"] })] }, PRICES);
  assert.equal(defaultEmbeddingTarget(view), null);
});
