import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { orderKeys, rotatesKey, servableModels, type KeySelectionInput } from "../../src/routing/key-selection.js";
import { createKeyCatalog } from "../../src/routing/model-catalog.js";
import { RoutingError, type RoutingErrorType } from "../../src/routing/routing-error.js";
import type { ProviderConfig, ProviderKey } from "../../src/routing/types.js";
import { seededRandom } from "../../src/routing/weighted-random.js";

function key(id: string, overrides: Partial<ProviderKey> = {}): ProviderKey {
  return { id, name: id, models: [], aliases: {}, weight: 1, ...overrides };
}

function config(keyIds: string[]): ProviderConfig {
  return { provider: "openai", allowedModels: ["*"], keyIds, weight: 1, budgets: [], rateLimit: null };
}

const catalog = createKeyCatalog(new Map(), { openai: ["gpt-4o"] });

function input(keys: ProviderKey[], overrides: Partial<KeySelectionInput> = {}): KeySelectionInput {
  return { provider: "openai", model: "gpt-4o", keys, config: null, catalog, random: seededRandom(3), ...overrides };
}

function assertRefused(request: KeySelectionInput, type: RoutingErrorType, status: number): void {
  assert.throws(
    () => orderKeys(request),
    (error: unknown) => error instanceof RoutingError && error.type === type && error.httpStatus === status,
  );
}

describe("orderKeys", () => {
  test("offers every key once, as a rotation order", () => {
    const ids = orderKeys(input([key("a"), key("b"), key("c")])).map((choice) => choice.key.id);
    assert.deepEqual([...ids].sort(), ["a", "b", "c"]);
  });
  test("key_ids [\"*\"] allows every key", () => {
    assert.equal(orderKeys(input([key("a"), key("b")], { config: config(["*"]) })).length, 2);
  });
  test("key_ids limits the keys to the listed ids", () => {
    const ids = orderKeys(input([key("a"), key("b"), key("c")], { config: config(["b"]) })).map((c) => c.key.id);
    assert.deepEqual(ids, ["b"]);
  });
  test("empty key_ids blocks every key", () => {
    assertRefused(input([key("a")], { config: config([]) }), "policy_keys_blocked", 403);
  });
  test("key_ids naming no configured key blocks every key", () => {
    assertRefused(input([key("a")], { config: config(["zz"]) }), "policy_keys_blocked", 403);
  });
  test("skips keys whose models do not include the requested model", () => {
    const ids = orderKeys(input([key("a", { models: ["gpt-4o-mini"] }), key("b", { models: ["gpt-4o"] })])).map((c) => c.key.id);
    assert.deepEqual(ids, ["b"]);
  });
  test("refuses a model no key allows", () => {
    assertRefused(input([key("a", { models: ["gpt-4o-mini"] })]), "caller_model_not_allowed", 400);
  });
  test("refuses a provider with no keys", () => {
    assertRefused(input([]), "caller_provider_not_configured", 400);
  });
  test("maps an alias to the upstream model and reports the alias", () => {
    const [choice] = orderKeys(input([key("a", { aliases: { prod: "gpt-4o-2024-08-06" } })], { model: "prod" }));
    assert.deepEqual(
      { upstreamModel: choice?.upstreamModel, alias: choice?.alias },
      { upstreamModel: "gpt-4o-2024-08-06", alias: "prod" },
    );
  });
  test("sends a non-alias model unchanged with no alias", () => {
    const [choice] = orderKeys(input([key("a")]));
    assert.deepEqual({ upstreamModel: choice?.upstreamModel, alias: choice?.alias }, { upstreamModel: "gpt-4o", alias: null });
  });
  test("does not reach an alias missing from a restricted models list", () => {
    assertRefused(input([key("a", { models: ["gpt-4o"], aliases: { prod: "gpt-4o" } })], { model: "prod" }), "caller_model_not_allowed", 400);
  });
  test("picks the first key in proportion to key weights over many requests", () => {
    const keys = [key("heavy", { weight: 3 }), key("light", { weight: 1 })];
    const random = seededRandom(99);
    let heavy = 0;
    for (let i = 0; i < 4000; i += 1) {
      if (orderKeys(input(keys, { random }))[0]?.key.id === "heavy") heavy += 1;
    }
    // Expected 3000; 5 standard deviations is about 140.
    assert.ok(Math.abs(heavy - 3000) < 140, `heavy first ${heavy} of 4000 times`);
  });
  test("puts zero-weight keys last", () => {
    const random = seededRandom(5);
    for (let i = 0; i < 100; i += 1) {
      const ids = orderKeys(input([key("off", { weight: 0 }), key("on")], { random })).map((c) => c.key.id);
      assert.deepEqual(ids, ["on", "off"]);
    }
  });
});

describe("servableModels", () => {
  const openai = ["gpt-4o", "gpt-4o-mini", "fast"];
  const aliasOnly = key("a", { aliases: { fast: "gpt-4o-mini" } });
  const keysCatalog = createKeyCatalog(new Map([["openai", [aliasOnly]]]), { openai });

  test("keeps only the allowed models a permitted key serves", () => {
    assert.deepEqual(servableModels(config(["*"]), [aliasOnly], keysCatalog), ["fast"]);
  });
  test("ignores the models of keys outside key_ids", () => {
    assert.deepEqual(servableModels(config(["b"]), [aliasOnly, key("b", { models: ["gpt-4o"] })], keysCatalog), ["gpt-4o"]);
  });
  test("serves nothing when key_ids blocks every key", () => {
    assert.deepEqual(servableModels(config([]), [key("a")], keysCatalog), []);
  });
});

describe("rotatesKey", () => {
  test("rotates on 429, 401, 403 and 402", () => {
    assert.deepEqual([429, 401, 403, 402].map(rotatesKey), [true, true, true, true]);
  });
  test("does not rotate on other statuses", () => {
    assert.deepEqual([400, 404, 500, 502, 503].map(rotatesKey), [false, false, false, false, false]);
  });
});
