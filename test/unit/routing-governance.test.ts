import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { routeRequest, type RoutingContext, type RoutingRequest } from "../../src/routing/governance-router.js";
import { createKeyCatalog } from "../../src/routing/model-catalog.js";
import { RoutingError, type RoutingErrorType } from "../../src/routing/routing-error.js";
import type { ProviderConfig, ProviderKey, VirtualKey } from "../../src/routing/types.js";
import { UsageLimits } from "../../src/routing/usage-limits.js";
import { seededRandom } from "../../src/routing/weighted-random.js";

const anyKey: ProviderKey = { id: "k", name: "k", models: [], aliases: {}, weight: 1 };
const catalog = createKeyCatalog(
  new Map([
    ["openai", [anyKey]],
    ["azure", [{ ...anyKey, models: ["gpt-4o"] }]],
    ["anthropic", [anyKey]],
  ]),
  { openai: ["gpt-4o", "gpt-4o-mini"], anthropic: ["claude-3-5-haiku-latest"] },
);

function providerConfig(provider: string, overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return { provider, allowedModels: ["*"], keyIds: ["*"], weight: 1, budgets: [], rateLimit: null, ...overrides };
}

function virtualKey(providerConfigs: ProviderConfig[], overrides: Partial<VirtualKey> = {}): VirtualKey {
  return { id: "vk-1", name: "team-a", value: "sk-gw-a", isActive: true, providerConfigs, mcpConfigs: [], teamId: "", customerId: "", budget: null, rateLimit: null, ...overrides };
}

function context(seed = 1): RoutingContext {
  return { catalog, limits: new UsageLimits(() => 0), random: seededRandom(seed) };
}

function route(request: RoutingRequest, ctx = context()) {
  return routeRequest(request, ctx);
}

function assertRefused(request: RoutingRequest, type: RoutingErrorType, status: number, fragment: string): void {
  assert.throws(
    () => route(request),
    (error: unknown) => {
      assert.ok(error instanceof RoutingError, String(error));
      assert.equal(error.type, type);
      assert.equal(error.httpStatus, status);
      assert.ok(error.message.includes(fragment), error.message);
      return true;
    },
  );
}

describe("routing without a virtual key", () => {
  test("routes an explicit provider prefix as given", () => {
    const decision = route({ model: "anthropic/claude-3-5-haiku-latest", virtualKey: null });
    assert.deepEqual(decision.primary, { provider: "anthropic", model: "claude-3-5-haiku-latest" });
    assert.deepEqual(decision.enginesUsed, []);
  });
  test("resolves a bare model to the catalog's first candidate", () => {
    const decision = route({ model: "gpt-4o", virtualKey: null });
    assert.deepEqual(decision.primary, { provider: "openai", model: "gpt-4o" });
    assert.deepEqual(decision.enginesUsed, ["model-catalog"]);
  });
  test("keeps request fallbacks in order", () => {
    const decision = route({ model: "openai/gpt-4o", fallbacks: ["azure/gpt-4o", "anthropic/claude-3-5-haiku-latest"], virtualKey: null });
    assert.deepEqual(decision.fallbacks, [
      { provider: "azure", model: "gpt-4o" },
      { provider: "anthropic", model: "claude-3-5-haiku-latest" },
    ]);
  });
  test("keeps a model id with slashes whole behind the provider prefix", () => {
    assert.deepEqual(route({ model: "openai/ft:org/x", virtualKey: null }).primary, { provider: "openai", model: "ft:org/x" });
  });
  test("asks for the provider/model form when no provider serves a bare model", () => {
    assertRefused({ model: "mystery-model", virtualKey: null }, "caller_provider_required", 400, "<provider>/<model>");
  });
  test("says an unknown prefix is not a configured provider", () => {
    assertRefused({ model: "nope/model", virtualKey: null }, "caller_provider_required", 400, '"nope" is not a configured provider');
  });
  test("rejects an empty model", () => {
    assertRefused({ model: "", virtualKey: null }, "caller_invalid_model", 400, "model is empty");
  });
  test("rejects a provider prefix without a model", () => {
    assertRefused({ model: "openai/", virtualKey: null }, "caller_invalid_model", 400, "no model");
  });
  test("rejects a fallback without a provider", () => {
    assertRefused({ model: "openai/gpt-4o", fallbacks: ["gpt-4o"], virtualKey: null }, "caller_invalid_model", 400, "fallbacks[0]");
  });
});

describe("governance routing", () => {
  test("rewrites a bare model to the only allowed provider", () => {
    const decision = route({ model: "gpt-4o", virtualKey: virtualKey([providerConfig("azure", { allowedModels: ["gpt-4o"] })]) });
    assert.deepEqual(decision.primary, { provider: "azure", model: "gpt-4o" });
    assert.deepEqual(decision.enginesUsed, ["governance"]);
  });
  test("adds the other allowed providers as fallbacks sorted by weight descending", () => {
    const key = virtualKey([
      providerConfig("openai", { weight: 0 }),
      providerConfig("azure", { allowedModels: ["gpt-4o"], weight: 1 }),
      providerConfig("custom", { allowedModels: ["gpt-4o"], weight: 5 }),
      providerConfig("anthropic", { weight: 9 }),
    ]);
    const decision = route({ model: "gpt-4o", virtualKey: key }, { ...context(), random: () => 0.99 });
    assert.deepEqual(decision.primary, { provider: "custom", model: "gpt-4o" });
    assert.deepEqual(decision.fallbacks, [
      { provider: "azure", model: "gpt-4o" },
      { provider: "openai", model: "gpt-4o" },
    ]);
  });
  test("puts allowed request fallbacks before the governance fallbacks", () => {
    const key = virtualKey([
      providerConfig("openai", { weight: 1 }),
      providerConfig("azure", { allowedModels: ["gpt-4o"], weight: 0 }),
      providerConfig("anthropic"),
    ]);
    const decision = route({ model: "gpt-4o", fallbacks: ["anthropic/claude-3-5-haiku-latest"], virtualKey: key });
    assert.deepEqual(decision.primary, { provider: "openai", model: "gpt-4o" });
    assert.deepEqual(decision.fallbacks, [
      { provider: "anthropic", model: "claude-3-5-haiku-latest" },
      { provider: "azure", model: "gpt-4o" },
    ]);
  });
  test("drops request fallbacks to providers outside the allowed set silently", () => {
    const key = virtualKey([providerConfig("openai")]);
    const decision = route({ model: "openai/gpt-4o", fallbacks: ["anthropic/claude-3-5-haiku-latest", "openai/gpt-4o-mini"], virtualKey: key });
    assert.deepEqual(decision.fallbacks, [{ provider: "openai", model: "gpt-4o-mini" }]);
  });
  test("drops request fallbacks to models the provider config does not allow", () => {
    const key = virtualKey([providerConfig("openai", { allowedModels: ["gpt-4o"] })]);
    const decision = route({ model: "openai/gpt-4o", fallbacks: ["openai/gpt-4o-mini"], virtualKey: key });
    assert.deepEqual(decision.fallbacks, []);
  });
  test("keeps an explicit provider prefix that the key allows", () => {
    const key = virtualKey([providerConfig("openai", { weight: 0 }), providerConfig("azure", { allowedModels: ["gpt-4o"], weight: 9 })]);
    const decision = route({ model: "openai/gpt-4o", virtualKey: key });
    assert.deepEqual(decision.primary, { provider: "openai", model: "gpt-4o" });
    assert.deepEqual(decision.enginesUsed, []);
  });
  test("accepts an allowed_models entry written with the provider prefix", () => {
    const key = virtualKey([providerConfig("openai", { allowedModels: ["openai/gpt-4o-mini"] })]);
    assert.deepEqual(route({ model: "gpt-4o-mini", virtualKey: key }).primary, { provider: "openai", model: "gpt-4o-mini" });
  });
  test("routes a provider that only the virtual key names", () => {
    const key = virtualKey([providerConfig("my-vllm", { allowedModels: ["qwen"] })]);
    assert.deepEqual(route({ model: "my-vllm/qwen", virtualKey: key }).primary, { provider: "my-vllm", model: "qwen" });
  });
  test("refuses an explicit provider outside the allowed set with 400", () => {
    assertRefused(
      { model: "anthropic/claude-3-5-haiku-latest", virtualKey: virtualKey([providerConfig("openai")]) },
      "policy_provider_not_allowed",
      400,
      'provider "anthropic" is not allowed',
    );
  });
  test("refuses an explicit provider whose config has empty key_ids", () => {
    const key = virtualKey([providerConfig("openai"), providerConfig("anthropic", { keyIds: [] })]);
    assertRefused({ model: "anthropic/claude-3-5-haiku-latest", virtualKey: key }, "policy_provider_not_allowed", 400, "is blocked");
  });
  test("refuses a model not allowed for any configured provider", () => {
    const key = virtualKey([providerConfig("openai", { allowedModels: ["gpt-4o"] })]);
    assertRefused({ model: "gpt-4o-mini", virtualKey: key }, "caller_model_not_allowed", 400, "not allowed for any provider");
  });
  test("refuses a model the pinned provider's config does not allow", () => {
    const key = virtualKey([providerConfig("openai", { allowedModels: ["gpt-4o"] })]);
    assertRefused({ model: "openai/gpt-4o-mini", virtualKey: key }, "caller_model_not_allowed", 400, 'not allowed for provider "openai"');
  });
  test("refuses everything when provider_configs is empty", () => {
    assertRefused({ model: "gpt-4o", virtualKey: virtualKey([]) }, "policy_no_providers", 400, "deny by default");
  });
  test("refuses everything when every allowed_models is empty", () => {
    const key = virtualKey([providerConfig("openai", { allowedModels: [] })]);
    assertRefused({ model: "openai/gpt-4o", virtualKey: key }, "policy_no_providers", 400, "empty allowed_models");
  });
  test("refuses everything when every key_ids is empty", () => {
    const key = virtualKey([providerConfig("openai", { keyIds: [] })]);
    assertRefused({ model: "gpt-4o", virtualKey: key }, "policy_no_providers", 400, "key_ids");
  });
  test("refuses an inactive virtual key", () => {
    const key = virtualKey([providerConfig("openai")], { isActive: false });
    assertRefused({ model: "gpt-4o", virtualKey: key }, "policy_virtual_key_inactive", 403, "inactive");
  });
});

describe("weighted provider selection", () => {
  test("picks providers in proportion to their weights over many requests", () => {
    const key = virtualKey([
      providerConfig("openai", { weight: 0.75 }),
      providerConfig("azure", { allowedModels: ["gpt-4o"], weight: 0.25 }),
    ]);
    const ctx = context(42);
    const draws = 4000;
    let openai = 0;
    for (let i = 0; i < draws; i += 1) {
      if (routeRequest({ model: "gpt-4o", virtualKey: key }, ctx).primary.provider === "openai") openai += 1;
    }
    // Expected 3000; a bound of 5 standard deviations (about 140) never fails by chance.
    assert.ok(Math.abs(openai - 3000) < 140, `openai chosen ${openai} of ${draws} times`);
  });
  test("never picks a zero-weight provider while another has weight", () => {
    const key = virtualKey([providerConfig("openai", { weight: 0 }), providerConfig("azure", { allowedModels: ["gpt-4o"], weight: 1 })]);
    const ctx = context(7);
    for (let i = 0; i < 200; i += 1) {
      assert.equal(routeRequest({ model: "gpt-4o", virtualKey: key }, ctx).primary.provider, "azure");
    }
  });
});
