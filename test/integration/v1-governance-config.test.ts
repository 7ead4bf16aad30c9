/** Virtual keys from the config file: bad entries stop boot with their path; enforce_governance refuses keyless calls. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const key = { id: "oa-1", name: "first", value: "sk-openai-1", models: [], aliases: {}, weight: 1, azureKeyConfig: null, bedrockKeyConfig: null, vertexKeyConfig: null };

test("a virtual key with a negative provider weight is refused with the path of the field", () => {
  assert.throws(
    () => inferenceOptionsFromFile({ openai: { keys: [key], network_config: { base_url: null } }, anthropic: { keys: [{ ...key, id: "an-1" }], network_config: { base_url: null } } }, [
      { id: "vk", name: "vk", value: "sk-gw-x", provider_configs: [
        { provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 },
        { provider: "anthropic", allowed_models: ["*"], key_ids: ["*"], weight: -1 },
      ] },
    ]),
    /governance\.virtual_keys\[0\]\.provider_configs\[1\]\.weight/,
  );
});

describe("client.enforce_governance", () => {
  let upstream: MockUpstream;
  let app: TestApp;
  before(async () => {
    upstream = await startMockOpenAi();
    const inference = inferenceOptionsFromFile({ openai: { keys: [key], network_config: { base_url: upstream.url } } }, [
      { id: "vk", name: "vk", value: "sk-gw-ok", provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] },
    ]);
    app = await startApp({ inference, client: { ...DEFAULT_CLIENT, enforceGovernance: true } });
  });
  after(async () => {
    await app.stop();
    await upstream.close();
  });

  const body = { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };

  test("refuses a request without a virtual key with a 401", async () => {
    const res = await api(app, "POST", "/v1/chat/completions", body);
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(typeof res.body.error.message, "string");
  });

  test("serves the same request with a virtual key in x-gw-vk", async () => {
    const res = await api(app, "POST", "/v1/chat/completions", body, { "x-gw-vk": "sk-gw-ok" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.object, "chat.completion");
  });
});

describe("/v1/chat/completions methods", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp();
  });
  after(() => app.stop());

  test("a GET is a 405 in the OpenAI envelope with Allow: POST", async () => {
    const res = await fetch(`${app.url}/v1/chat/completions`);
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "POST");
    const body = (await res.json()) as { error: { type: string } };
    assert.equal(body.error.type, "caller_method_not_allowed");
  });
});
