import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RoutingError } from "../../src/routing/routing-error.js";
import type { ProviderConfig, VirtualKey } from "../../src/routing/types.js";
import { providerConfigsProblem } from "../../src/routing/validate-provider-configs.js";
import { VirtualKeyRegistry } from "../../src/routing/virtual-key-registry.js";

function virtualKey(id: string, value: string): VirtualKey {
  return { id, name: id, value, isActive: true, providerConfigs: [], mcpConfigs: [], teamId: "", customerId: "", budget: null, rateLimit: null };
}

function config(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return { provider: "openai", allowedModels: ["*"], keyIds: ["*"], weight: 1, budgets: [], rateLimit: null, ...overrides };
}

describe("VirtualKeyRegistry", () => {
  test("finds a key by its value", () => {
    const registry = new VirtualKeyRegistry();
    registry.put(virtualKey("vk-1", "sk-gw-1"));
    assert.equal(registry.resolve("sk-gw-1")?.id, "vk-1");
  });
  test("returns null when the request carries no key", () => {
    assert.equal(new VirtualKeyRegistry().resolve(undefined), null);
  });
  test("refuses an unknown key with 401", () => {
    assert.throws(
      () => new VirtualKeyRegistry().resolve("sk-gw-nope"),
      (error: unknown) => error instanceof RoutingError && error.type === "caller_unknown_virtual_key" && error.httpStatus === 401,
    );
  });
  test("forgets the old value when a key's value changes", () => {
    const registry = new VirtualKeyRegistry();
    registry.put(virtualKey("vk-1", "old"));
    registry.put(virtualKey("vk-1", "new"));
    assert.throws(() => registry.resolve("old"), RoutingError);
    assert.equal(registry.resolve("new")?.id, "vk-1");
  });
  test("forgets a removed key", () => {
    const registry = new VirtualKeyRegistry();
    registry.put(virtualKey("vk-1", "v"));
    registry.remove("vk-1");
    assert.equal(registry.byId("vk-1"), null);
  });
});

describe("providerConfigsProblem", () => {
  test("accepts a valid config", () => assert.equal(providerConfigsProblem([config()]), null));
  test("accepts a fractional weight", () => assert.equal(providerConfigsProblem([config({ weight: 0.3 })]), null));
  test("rejects a negative weight", () => {
    assert.equal(providerConfigsProblem([config({ weight: -1 })])?.field, "provider_configs[0].weight");
  });
  test("rejects an infinite weight", () => {
    assert.equal(providerConfigsProblem([config({ weight: Infinity })])?.field, "provider_configs[0].weight");
  });
  test("rejects a NaN weight", () => {
    assert.equal(providerConfigsProblem([config({ weight: Number.NaN })])?.field, "provider_configs[0].weight");
  });
  test("rejects a provider configured twice", () => {
    assert.equal(providerConfigsProblem([config(), config()])?.field, "provider_configs[1].provider");
  });
  test("rejects a negative budget", () => {
    const problem = providerConfigsProblem([config({ budgets: [{ maxLimit: -5, resetDurationMs: 1000 }] })]);
    assert.equal(problem?.field, "provider_configs[0].budgets[0].max_limit");
  });
  test("rejects a fractional token limit", () => {
    const problem = providerConfigsProblem([config({ rateLimit: { tokenMaxLimit: 1.5, tokenResetDurationMs: 1000 } })]);
    assert.equal(problem?.field, "provider_configs[0].rate_limit.token_max_limit");
  });
  test("rejects a wildcard mixed with model names", () => {
    assert.equal(providerConfigsProblem([config({ allowedModels: ["*", "gpt-4o"] })])?.field, "provider_configs[0].allowed_models");
  });
});
