import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  allowedModelsOfConfig,
  allowedModelsOfKey,
  configAllowsModel,
  keyAllowsModel,
  resolveAlias,
} from "../../src/routing/allowed-models.js";
import { createKeyCatalog } from "../../src/routing/model-catalog.js";
import type { ProviderConfig, ProviderKey } from "../../src/routing/types.js";

function key(models: string[], aliases: Record<string, string> = {}): ProviderKey {
  return { id: "k1", name: "main", models, aliases, weight: 1 };
}

function config(provider: string, allowedModels: string[]): ProviderConfig {
  return { provider, allowedModels, keyIds: ["*"], weight: 1, budgets: [], rateLimit: null };
}

const catalog = createKeyCatalog(new Map([["openai", [key(["gpt-custom"])]]]), { openai: ["gpt-4o", "gpt-4o-mini"] });

describe("allowedModelsOfKey", () => {
  test("uses the models list when it is set", () => {
    assert.deepEqual(allowedModelsOfKey(key(["gpt-4o"]), "openai", catalog), { restricted: true, models: ["gpt-4o"] });
  });
  test("uses the alias names when models is empty", () => {
    const allowed = allowedModelsOfKey(key([], { prod: "gpt-4o-2024-08-06" }), "openai", catalog);
    assert.deepEqual(allowed, { restricted: true, models: ["prod"] });
  });
  test("falls back to every model the catalog knows when neither is set", () => {
    const allowed = allowedModelsOfKey(key([]), "openai", catalog);
    assert.equal(allowed.restricted, false);
    assert.deepEqual([...allowed.models].sort(), ["gpt-4o", "gpt-4o-mini", "gpt-custom"]);
  });
  test("treats models [\"*\"] as every model", () => {
    assert.equal(allowedModelsOfKey(key(["*"]), "openai", catalog).restricted, false);
  });
  test("lets models win over aliases", () => {
    const allowed = allowedModelsOfKey(key(["gpt-4o"], { prod: "gpt-4o" }), "openai", catalog);
    assert.deepEqual(allowed.models, ["gpt-4o"]);
  });
});

describe("keyAllowsModel", () => {
  test("never lets an alias widen a restricted models list", () => {
    assert.equal(keyAllowsModel(key(["gpt-4o"], { prod: "gpt-4o" }), "prod"), false);
  });
  test("reaches an alias that is also in the models list", () => {
    assert.equal(keyAllowsModel(key(["gpt-4o", "prod"], { prod: "gpt-4o" }), "prod"), true);
  });
  test("lets an unrestricted key serve a model the catalog does not know", () => {
    assert.equal(keyAllowsModel(key([]), "gpt-next"), true);
  });
  test("compares model names case-sensitively", () => {
    assert.equal(keyAllowsModel(key(["gpt-4o"]), "GPT-4o"), false);
  });
  test("restricts a key with aliases and no models to its alias names", () => {
    assert.equal(keyAllowsModel(key([], { prod: "gpt-4o" }), "prod"), true);
    assert.equal(keyAllowsModel(key([], { prod: "gpt-4o" }), "gpt-4o"), false);
  });
});

describe("resolveAlias", () => {
  test("maps an alias to the upstream id", () => {
    assert.equal(resolveAlias(key([], { prod: "gpt-4o-2024-08-06" }), "prod"), "gpt-4o-2024-08-06");
  });
  test("passes a name that is no alias through unchanged", () => {
    assert.equal(resolveAlias(key([], { prod: "gpt-4o" }), "gpt-4o-mini"), "gpt-4o-mini");
  });
  test("ignores names inherited from Object.prototype", () => {
    assert.equal(resolveAlias(key([]), "toString"), "toString");
  });
});

describe("provider config allowed_models", () => {
  test("[\"*\"] allows every model the catalog knows for the provider", () => {
    assert.equal(configAllowsModel(config("openai", ["*"]), "gpt-custom", catalog), true);
    assert.equal(configAllowsModel(config("openai", ["*"]), "gpt-4o", catalog), true);
  });
  test("[\"*\"] refuses a model the catalog does not know for the provider", () => {
    assert.equal(configAllowsModel(config("openai", ["*"]), "claude-3-5-haiku-latest", catalog), false);
  });
  test("[] allows no model", () => {
    assert.deepEqual(allowedModelsOfConfig(config("openai", []), catalog), []);
    assert.equal(configAllowsModel(config("openai", []), "gpt-4o", catalog), false);
  });
  test("an explicit list ignores the catalog", () => {
    assert.equal(configAllowsModel(config("openai", ["gpt-next"]), "gpt-next", catalog), true);
    assert.equal(configAllowsModel(config("openai", ["gpt-next"]), "gpt-4o", catalog), false);
  });
  test("strips the provider prefix of an entry before comparing", () => {
    assert.equal(configAllowsModel(config("openai", ["openai/gpt-4o"]), "gpt-4o", catalog), true);
  });
  test("keeps another vendor's prefix as part of the model id", () => {
    const entry = config("openrouter", ["openai/gpt-4o"]);
    assert.equal(configAllowsModel(entry, "openai/gpt-4o", catalog), true);
    assert.equal(configAllowsModel(entry, "gpt-4o", catalog), false);
  });
  test("compares an explicit list case-sensitively", () => {
    assert.equal(configAllowsModel(config("openai", ["gpt-4o"]), "GPT-4o", catalog), false);
  });
});

describe("createKeyCatalog", () => {
  test("lists providers of a model in configured order", () => {
    const both = createKeyCatalog(
      new Map([
        ["azure", [key(["gpt-4o"])]],
        ["openai", [key([])]],
      ]),
      { openai: ["gpt-4o"] },
    );
    assert.deepEqual(both.providersOf("gpt-4o"), ["azure", "openai"]);
  });
  test("counts alias names as models of the provider", () => {
    const aliased = createKeyCatalog(new Map([["azure", [key([], { "my-gpt": "gpt-4o" })]]]), {});
    assert.deepEqual(aliased.modelsOf("azure"), ["my-gpt"]);
  });
  test("hasModel answers as modelsOf does, for configured and bundled-only providers", () => {
    const mixed = createKeyCatalog(new Map([["azure", [key([], { "my-gpt": "gpt-4o" })]]]), { openai: ["gpt-4o"] });
    assert.equal(mixed.hasModel("azure", "my-gpt"), true);
    assert.equal(mixed.hasModel("azure", "gpt-4o"), false);
    assert.equal(mixed.hasModel("openai", "gpt-4o"), true);
    assert.equal(mixed.hasModel("mistral", "gpt-4o"), false);
  });
  test("does not offer a provider that has no keys for a bare model", () => {
    assert.deepEqual(catalog.providersOf("claude-3-5-haiku-latest"), []);
  });
});
