/** The pricing lookup chain and request cost. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { PriceTable } from "../../src/routing/pricing.js";
import { parsePricingDatasheet } from "../../src/routing/pricing-data.js";

const table = new PriceTable({
  "gpt-4o|openai|chat": { input_cost_per_token: 2e-6, output_cost_per_token: 8e-6 },
  "gpt-4o|openai|responses": { input_cost_per_token: 3e-6, output_cost_per_token: 9e-6 },
  "claude-x|anthropic|chat": { input_cost_per_token: 1e-6, output_cost_per_token: 5e-6 },
  "meta-llama/llama-9|openrouter|chat": { input_cost_per_token: 1e-7, output_cost_per_token: 2e-7 },
});

test("finds an exact model|provider|mode entry", () => {
  assert.equal(table.lookup("openai", "gpt-4o", "responses")?.input_cost_per_token, 3e-6);
});

test("prices an Azure deployment of an OpenAI model as OpenAI", () => {
  assert.equal(table.lookup("azure", "gpt-4o", "chat")?.input_cost_per_token, 2e-6);
});

test("strips a vendor/ prefix and prices the vendor's own model", () => {
  assert.equal(table.lookup("openrouter", "anthropic/claude-x", "chat")?.output_cost_per_token, 5e-6);
});

test("adds a vendor prefix the provider lists the model under", () => {
  assert.equal(table.lookup("openrouter", "llama-9", "chat")?.input_cost_per_token, 1e-7);
});

test("falls back from responses mode to chat mode", () => {
  assert.equal(table.lookup("anthropic", "claude-x", "responses")?.input_cost_per_token, 1e-6);
});

test("falls back to the alias when the upstream id has no price", () => {
  const cost = table.cost({ provider: "openai", upstreamModel: "my-deployment-7", alias: "gpt-4o", mode: "chat" }, { input_tokens: 10, output_tokens: 2 });
  assert.equal(cost, 10 * 2e-6 + 2 * 8e-6);
});

test("answers null for a model it cannot price", () => {
  assert.equal(table.cost({ provider: "openai", upstreamModel: "nope", alias: null, mode: "chat" }, { input_tokens: 1, output_tokens: 1 }), null);
});

test("answers a repeated lookup, found or not, as the first time, each mode and provider apart", () => {
  const fresh = new PriceTable({
    "gpt-4o|openai|chat": { input_cost_per_token: 2e-6, output_cost_per_token: 8e-6 },
    "gpt-4o|openai|embedding": { input_cost_per_token: 1e-8, output_cost_per_token: 0 },
  });
  for (let round = 0; round < 2; round++) {
    assert.equal(fresh.lookup("openai", "gpt-4o", "chat")?.input_cost_per_token, 2e-6);
    assert.equal(fresh.lookup("openai", "gpt-4o", "embedding")?.input_cost_per_token, 1e-8);
    assert.equal(fresh.lookup("azure", "gpt-4o", "responses")?.input_cost_per_token, 2e-6);
    assert.equal(fresh.lookup("anthropic", "gpt-4o", "chat"), null);
    assert.equal(fresh.lookup("openai", "gpt-5", "chat"), null);
  }
});

test("still prices a model after more distinct lookups than it remembers", () => {
  const fresh = new PriceTable({ "gpt-4o|openai|chat": { input_cost_per_token: 2e-6, output_cost_per_token: 8e-6 } });
  assert.equal(fresh.lookup("openai", "gpt-4o", "chat")?.input_cost_per_token, 2e-6);
  for (let i = 0; i < 5000; i++) assert.equal(fresh.lookup("openai", `unknown-${i}`, "chat"), null);
  assert.equal(fresh.lookup("openai", "gpt-4o", "chat")?.input_cost_per_token, 2e-6);
});

test("the bundled table prices the well-known models", () => {
  const bundled = new PriceTable();
  for (const [provider, model] of [["openai", "gpt-4o-mini"], ["anthropic", "claude-sonnet-4-20250514"], ["groq", "llama-3.3-70b-versatile"], ["mistral", "mistral-large-latest"]] as const) {
    assert.ok(bundled.lookup(provider, model, "chat"), `${provider}/${model}`);
  }
});

const synced = PriceTable.fromEntries(
  parsePricingDatasheet(
    JSON.stringify({
      "gemini-x": { litellm_provider: "vertex", mode: "chat", input_cost_per_token: 7e-7, output_cost_per_token: 1e-6 },
      "anthropic.claude-y-v1:0": { litellm_provider: "bedrock", mode: "chat", input_cost_per_token: 3e-6, output_cost_per_token: 1.5e-5 },
      "openrouter/openai/gpt-z": { litellm_provider: "openrouter", mode: "chat", input_cost_per_token: 5e-6, output_cost_per_token: 6e-6 },
    }),
  ),
);

test("prices a Gemini API model under its parent cloud, Vertex", () => {
  assert.equal(synced.lookup("gemini", "gemini-x", "chat")?.input_cost_per_token, 7e-7);
});

test("adds a dotted vendor prefix a cloud host lists the model under", () => {
  assert.equal(synced.lookup("bedrock", "claude-y-v1:0", "responses")?.input_cost_per_token, 3e-6);
});

test("a provider/model datasheet key is priced under the provider without its prefix", () => {
  assert.equal(synced.lookup("openrouter", "openai/gpt-z", "chat")?.input_cost_per_token, 5e-6);
  assert.equal(synced.lookup("openrouter", "gpt-z", "chat")?.input_cost_per_token, 5e-6);
});

test("a datasheet entry with a negative price is refused naming it", () => {
  assert.throws(() => parsePricingDatasheet('{"m": {"provider": "p", "output_cost_per_token": -1}}'), /entry "m"\.output_cost_per_token must be a number >= 0, got -1/);
});

test("a datasheet entry that is not an object is refused naming it", () => {
  assert.throws(() => parsePricingDatasheet('{"m": 3}'), /entry "m" must be an object/);
});

test("a datasheet whose provider is not a string is refused naming it", () => {
  assert.throws(() => parsePricingDatasheet('{"m": {"litellm_provider": 5}}'), /entry "m"\.litellm_provider must be a string/);
});
