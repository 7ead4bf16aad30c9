/** The catalog lookup rules: direct match, then aggregator, multi-vendor cloud, fast-inference and cloud-host resolution. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createKeyCatalog } from "../../src/routing/model-catalog.js";
import { providerKey } from "../helpers/provider-keys.js";

const key = providerKey();

function catalog(priced: Record<string, string[]>, configured = Object.keys(priced)) {
  return createKeyCatalog(new Map(configured.map((p) => [p, [key]])), {}, new Map(), new Map(Object.entries(priced)));
}

test("a direct match in the pool comes first and keeps the requested id", () => {
  const c = catalog({ openai: ["gpt-x"], openrouter: ["openai/gpt-x"] });
  assert.deepEqual(c.candidatesOf("gpt-x"), [
    { provider: "openai", model: "gpt-x", rule: "direct" },
    { provider: "openrouter", model: "openai/gpt-x", rule: "aggregator" },
  ]);
});

test("an aggregator that lists vendor/model serves the bare model under that id", () => {
  const c = catalog({ openrouter: ["anthropic/claude-x", "openai/gpt-x"] });
  assert.deepEqual(c.providersOf("claude-x"), ["openrouter"]);
  assert.equal(c.idAt("openrouter", "claude-x"), "anthropic/claude-x");
  assert.ok(c.hasModel("openrouter", "claude-x"));
});

test("a multi-vendor cloud that lists vendor/model serves the bare model", () => {
  const c = catalog({ vertex: ["google/gemini-x", "anthropic/claude-v"] });
  assert.deepEqual(c.candidatesOf("gemini-x"), [{ provider: "vertex", model: "google/gemini-x", rule: "multi_vendor_cloud" }]);
});

test("a fast-inference provider that lists vendor/model serves the vendor's model", () => {
  const c = catalog({ groq: ["openai/gpt-oss-x", "meta-llama/llama-x"] });
  assert.deepEqual(c.candidatesOf("gpt-oss-x"), [{ provider: "groq", model: "openai/gpt-oss-x", rule: "fast_inference" }]);
});

test("a cloud model host matches by substring with a dotted vendor prefix, the closest id first", () => {
  const c = catalog({ bedrock: ["us.anthropic.claude-x-20250101-v1:0", "anthropic.claude-x-v1:0", "amazon.nova-x"] });
  assert.deepEqual(c.candidatesOf("claude-x"), [{ provider: "bedrock", model: "anthropic.claude-x-v1:0", rule: "cloud_host" }]);
});

test("cross-provider candidates follow the rules' order: aggregator, multi-vendor cloud, fast inference, cloud host", () => {
  const c = catalog({ bedrock: ["meta.llama-x-v1:0"], groq: ["meta-llama/llama-x"], vertex: ["meta/llama-x"], openrouter: ["meta-llama/llama-x"] });
  assert.deepEqual(c.providersOf("llama-x"), ["openrouter", "vertex", "groq", "bedrock"]);
});

test("a provider of another kind is not matched by vendor prefix", () => {
  const c = catalog({ acme: ["openai/gpt-x"] });
  assert.deepEqual(c.providersOf("gpt-x"), []);
});

test("a vendor prefix of more than one segment does not match", () => {
  const c = catalog({ openrouter: ["x/openai/gpt-x"] });
  assert.deepEqual(c.providersOf("gpt-x"), []);
});

test("only configured providers are candidates", () => {
  const c = createKeyCatalog(new Map([["openai", [key]]]), { openrouter: ["openai/gpt-x"] });
  assert.deepEqual(c.providersOf("gpt-x"), []);
});

test("listed models and keys' models join the pool", () => {
  const c = createKeyCatalog(new Map([["acme", [providerKey({ models: ["m-key"] })]]]), {}, new Map([["acme", ["m-listed"]]]));
  assert.deepEqual([...c.modelsOf("acme")].sort(), ["m-key", "m-listed"]);
});
