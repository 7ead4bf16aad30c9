/**
 * Listings that tell the truth: GET /v1/models and the coding-agent listing GET /anthropic/v1/models show
 * exactly the models the caller's virtual key can use, and every model they show routes through the real
 * server with the OpenAI SDK, for keys with explicit models, aliases, `*` and `[]`, and without a key.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { errorType, fileKey, refusal, sdk } from "../helpers/inference.js";

let upstream: MockUpstream;
let app: TestApp;

before(async () => {
  upstream = await startMockOpenAi();
  const providers = {
    openai: { keys: [fileKey("oa")], network_config: { base_url: upstream.url } },
    // Restricted by its aliases: only "fast" is usable, whatever the catalog lists for acme.
    acme: { keys: [fileKey("ac", { aliases: { fast: "gpt-4o-mini" } })], network_config: { base_url: upstream.url } },
    // models wins over aliases: "beta-2" is not reachable.
    beta: { keys: [fileKey("be", { models: ["beta-1"], aliases: { "beta-2": "gpt-4o" } })], network_config: { base_url: upstream.url } },
    // An aggregator id whose vendor is a provider too: bare, it must go out as "gpt-cross".
    openrouter: { keys: [fileKey("or", { models: ["openai/gpt-cross"] })], network_config: { base_url: upstream.url } },
  };
  app = await startApp({ inference: inferenceOptionsFromFile(providers, []) });
  // The list-models fetch at start runs in the background; wait for it so listings are stable.
  for (let i = 0; i < 300; i++) {
    const res = await api(app, "GET", "/v1/models?provider=openai");
    if (res.body.data?.some((m: { id: string }) => m.id === "openai/gpt-4o")) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

async function virtualKey(name: string, providerConfigs: unknown[]): Promise<string> {
  const res = await api(app, "POST", "/api/governance/virtual-keys", { name, provider_configs: providerConfigs });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.virtual_key.value;
}

async function listed(client: OpenAI): Promise<string[]> {
  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  return ids.sort();
}

async function compatListed(key: string | null, limit = 1000): Promise<{ ids: string[]; hasMore: boolean }> {
  const res = await api(app, "GET", `/anthropic/v1/models?limit=${limit}`, undefined, key === null ? {} : { "x-api-key": key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { ids: res.body.data.map((m: { id: string }) => m.id).sort(), hasMore: res.body.has_more };
}

async function assertEveryModelRoutes(client: OpenAI, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const completion = await client.chat.completions.create({ model: id, messages: [{ role: "user", content: id }] });
    assert.equal(completion.choices[0]?.message.content, `echo: ${id}`, id);
  }
}

describe("a key with an explicit allowed_models list", () => {
  let key: string;
  before(async () => {
    key = await virtualKey("explicit", [{ provider: "openai", allowed_models: ["gpt-4o-mini", "openai/gpt-4o"], key_ids: ["*"], weight: 1 }]);
  });

  test("GET /v1/models lists exactly its models, and each routes", async () => {
    const ids = await listed(sdk(app, key));
    assert.deepEqual(ids, ["openai/gpt-4o", "openai/gpt-4o-mini"]);
    await assertEveryModelRoutes(sdk(app, key), ids);
  });

  test("the compatibility listing shows them without the provider prefix, and each bare name routes", async () => {
    const { ids } = await compatListed(key);
    assert.deepEqual(ids, ["gpt-4o", "gpt-4o-mini"]);
    await assertEveryModelRoutes(sdk(app, key), ids);
  });

  test("a model it does not list does not route", async () => {
    const err = await refusal(sdk(app, key).chat.completions.create({ model: "openai/o3", messages: [{ role: "user", content: "x" }] }));
    assert.equal(errorType(err), "caller_model_not_allowed");
  });
});

describe("a key with allowed_models [\"*\"] over providers whose keys restrict models", () => {
  let key: string;
  before(async () => {
    key = await virtualKey("star", ["openai", "acme", "beta", "openrouter"].map((provider) => ({ provider, allowed_models: ["*"], key_ids: ["*"], weight: 1 })));
  });

  test("GET /v1/models lists the alias a key is restricted to and the models a models list keeps, and each routes", async () => {
    const ids = await listed(sdk(app, key));
    assert.deepEqual(ids.filter((id) => !id.startsWith("openai/")), ["acme/fast", "beta/beta-1", "openrouter/openai/gpt-cross"]);
    assert.ok(ids.includes("openai/gpt-4o-mini"));
    await assertEveryModelRoutes(sdk(app, key), ids);
  });

  test("?provider= keeps one provider's usable models", async () => {
    const res = await api(app, "GET", "/v1/models?provider=acme", undefined, { authorization: `Bearer ${key}` });
    assert.deepEqual(res.body.data.map((m: { id: string }) => m.id), ["acme/fast"]);
  });

  test("every bare name of the compatibility listing routes", async () => {
    const { ids } = await compatListed(key);
    assert.ok(ids.includes("fast") && ids.includes("beta-1") && !ids.includes("beta-2"));
    assert.ok(ids.includes("gpt-cross") && !ids.includes("openai/gpt-cross"));
    await assertEveryModelRoutes(sdk(app, key), ids);
  });

  test("limit cuts the compatibility listing and says there is more", async () => {
    const page = await compatListed(key, 1);
    assert.equal(page.ids.length, 1);
    assert.equal(page.hasMore, true);
  });
});

describe("a key with allowed_models []", () => {
  test("lists nothing on either listing", async () => {
    const key = await virtualKey("none", [{ provider: "openai", allowed_models: [], key_ids: ["*"], weight: 1 }]);
    assert.deepEqual(await listed(sdk(app, key)), []);
    assert.deepEqual((await compatListed(key)).ids, []);
  });
});

describe("without a virtual key", () => {
  test("GET /v1/models lists what the providers' keys serve, and each routes", async () => {
    const ids = await listed(sdk(app, null));
    assert.ok(ids.includes("acme/fast") && !ids.includes("acme/gpt-4o") && !ids.includes("beta/beta-2"));
    await assertEveryModelRoutes(sdk(app, null), ids);
  });

  test("every bare name of the compatibility listing routes", async () => {
    const { ids } = await compatListed(null);
    assert.ok(ids.length > 0);
    await assertEveryModelRoutes(sdk(app, null), ids);
  });
});
