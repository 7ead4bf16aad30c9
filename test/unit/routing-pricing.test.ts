/** The pricing lookup chain and request cost. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { PriceTable } from "../../src/routing/pricing.js";

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

test("the bundled table prices the well-known models", () => {
  const bundled = new PriceTable();
  for (const [provider, model] of [["openai", "gpt-4o-mini"], ["anthropic", "claude-sonnet-4-20250514"], ["groq", "llama-3.3-70b-versatile"], ["mistral", "mistral-large-latest"]] as const) {
    assert.ok(bundled.lookup(provider, model, "chat"), `${provider}/${model}`);
  }
});
