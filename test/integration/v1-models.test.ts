/**
 * Model listings: GET /v1/models (the catalog, `provider/model`, through the official SDK) and the
 * coding-agent listing GET /anthropic/v1/models (what the caller's virtual key may use, bare names).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { errorType, fileKey, refusal, sdk } from "../helpers/inference.js";

let upstream: MockUpstream;
let app: TestApp;

before(async () => {
  upstream = await startMockOpenAi();
  app = await startApp({
    inference: inferenceOptionsFromFile(
      {
        openai: { keys: [fileKey("oa")], network_config: { base_url: upstream.url } },
        groq: { keys: [fileKey("gq", { models: ["llama-3.1-8b-instant"] })], network_config: { base_url: upstream.url } },
      },
      [
        { id: "vk-two", name: "two", value: "sk-gw-two", provider_configs: [
          { provider: "openai", allowed_models: ["openai/gpt-4o-mini", "gpt-4o"], key_ids: ["*"] },
          { provider: "groq", allowed_models: ["*"], key_ids: ["*"] },
        ] },
        { id: "vk-blocked", name: "blocked", value: "sk-gw-blocked", provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: [] }] },
      ],
    ),
  });
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

test("GET /v1/models lists every configured provider's models as provider/model", async () => {
  const client = sdk(app, null);
  const ids: string[] = [];
  for await (const model of client.models.list()) {
    ids.push(model.id);
    assert.equal(model.object, "model");
  }
  assert.ok(ids.includes("openai/gpt-4o-mini"));
  assert.ok(ids.includes("groq/llama-3.1-8b-instant"));
  assert.ok(ids.every((id) => id.startsWith("openai/") || id.startsWith("groq/")));
});

test("GET /v1/models?provider= keeps one provider", async () => {
  const res = await api(app, "GET", "/v1/models?provider=groq");
  assert.equal(res.status, 200);
  assert.ok(res.body.data.length > 0);
  assert.ok(res.body.data.every((m: { id: string; owned_by: string }) => m.id.startsWith("groq/") && m.owned_by === "groq"));
});

test("the compatibility listing shows the key's allowed models without provider prefix", async () => {
  const res = await api(app, "GET", "/anthropic/v1/models?limit=1000", undefined, { "x-api-key": "sk-gw-two" });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const ids = res.body.data.map((m: { id: string }) => m.id);
  assert.ok(ids.includes("gpt-4o-mini"));
  assert.ok(ids.includes("gpt-4o"));
  assert.ok(ids.includes("llama-3.1-8b-instant"));
  assert.ok(!ids.includes("o3"), "o3 is not in the key's openai allowed_models");
  assert.ok(ids.every((id: string) => !id.includes("/")));
  assert.equal(res.body.data[0].type, "model");
  assert.equal(res.body.has_more, false);
  assert.equal(res.body.first_id, ids[0]);
});

test("the compatibility listing pages with limit and says has_more", async () => {
  const res = await api(app, "GET", "/anthropic/v1/models?limit=1", undefined, { authorization: "Bearer sk-gw-two" });
  assert.equal(res.status, 200);
  assert.equal(res.body.data.length, 1);
  assert.equal(res.body.has_more, true);
});

test("the compatibility listing offers nothing of a provider whose keys are all blocked", async () => {
  const res = await api(app, "GET", "/anthropic/v1/models?limit=1000", undefined, { "x-api-key": "sk-gw-blocked" });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.data, []);
});

test("the compatibility listing refuses an unknown key with a 401 and a bad limit with a 400", async () => {
  assert.equal((await api(app, "GET", "/anthropic/v1/models", undefined, { "x-api-key": "sk-gw-nope" })).status, 401);
  const bad = await api(app, "GET", "/anthropic/v1/models?limit=-5", undefined, { "x-api-key": "sk-gw-two" });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /limit/);
});

test("the compatibility listing answers every entry in the Anthropic model shape, ids first to last", async () => {
  const res = await api(app, "GET", "/anthropic/v1/models?limit=2", undefined, { "x-api-key": "sk-gw-two" });
  assert.equal(res.status, 200);
  assert.deepEqual(Object.keys(res.body).sort(), ["data", "first_id", "has_more", "last_id"]);
  for (const model of res.body.data) {
    assert.deepEqual(Object.keys(model).sort(), ["created_at", "display_name", "id", "type"]);
    assert.equal(model.type, "model");
    assert.ok(!Number.isNaN(Date.parse(model.created_at)));
  }
  assert.equal(res.body.first_id, res.body.data[0].id);
  assert.equal(res.body.last_id, res.body.data[1].id);
});

test("GET /v1/models/{id} answers a model the key may use in the OpenAI shape, by provider/model or bare name", async () => {
  const client = sdk(app, "sk-gw-two");
  const prefixed = await client.models.retrieve("openai/gpt-4o-mini");
  assert.equal(prefixed.id, "openai/gpt-4o-mini");
  assert.equal(prefixed.object, "model");
  assert.equal(prefixed.owned_by, "openai");
  assert.equal(typeof prefixed.created, "number");
  const raw = await api(app, "GET", "/v1/models/llama-3.1-8b-instant", undefined, { authorization: "Bearer sk-gw-two" });
  assert.equal(raw.status, 200);
  assert.deepEqual(raw.body, { id: "llama-3.1-8b-instant", object: "model", created: prefixed.created, owned_by: "groq" });
});

test("GET /v1/models/{id} is a 404 in the OpenAI envelope for a model the key may not use", async () => {
  const err = await refusal(sdk(app, "sk-gw-two").models.retrieve("openai/o3"));
  assert.equal(err.status, 404);
  assert.equal(errorType(err), "caller_model_not_found");
  const res = await api(app, "GET", "/v1/models/openai/o3", undefined, { authorization: "Bearer sk-gw-two" });
  assert.equal(res.status, 404);
  assert.equal(res.body.error.param, "model");
  assert.match(res.body.error.message, /"openai\/o3" does not exist or this caller may not use it/);
});

test("GET /v1/models/{id} without a key looks in the catalog, and refuses an unknown key with a 401", async () => {
  assert.equal((await sdk(app, null).models.retrieve("groq/llama-3.1-8b-instant")).owned_by, "groq");
  assert.equal((await api(app, "GET", "/v1/models/no-such-model")).status, 404);
  const err = await refusal(sdk(app, "sk-gw-nope").models.retrieve("openai/gpt-4o-mini"));
  assert.equal(err.status, 401);
});

test("the compatibility listing pages with after_id and before_id, as the Anthropic SDK's auto-pagination does", async () => {
  const client = new Anthropic({ apiKey: "sk-gw-two", baseURL: `${app.url}/anthropic`, maxRetries: 0 });
  const all = (await api(app, "GET", "/anthropic/v1/models", undefined, { "x-api-key": "sk-gw-two" })).body.data.map((m: { id: string }) => m.id);
  assert.ok(all.length >= 3);
  const paged: string[] = [];
  for await (const model of client.models.list({ limit: 1 })) paged.push(model.id);
  assert.deepEqual(paged, all);
  const before = await api(app, "GET", `/anthropic/v1/models?limit=1&before_id=${encodeURIComponent(all[2])}`, undefined, { "x-api-key": "sk-gw-two" });
  assert.deepEqual(before.body.data.map((m: { id: string }) => m.id), [all[1]]);
  assert.equal(before.body.has_more, true);
});

test("the compatibility listing answers one model, and a model the key may not use with not_found_error", async () => {
  const client = new Anthropic({ apiKey: "sk-gw-two", baseURL: `${app.url}/anthropic`, maxRetries: 0 });
  const model = await client.models.retrieve("gpt-4o-mini");
  assert.deepEqual({ type: model.type, id: model.id, display_name: model.display_name }, { type: "model", id: "gpt-4o-mini", display_name: "gpt-4o-mini" });
  const res = await api(app, "GET", "/anthropic/v1/models/o3", undefined, { "x-api-key": "sk-gw-two" });
  assert.equal(res.status, 404);
  assert.deepEqual(res.body.type, "error");
  assert.equal(res.body.error.type, "not_found_error");
});

test("the compatibility listing refuses in Anthropic's envelope, and an empty listing has null first and last ids", async () => {
  const unknown = await api(app, "GET", "/anthropic/v1/models", undefined, { "x-api-key": "sk-gw-nope" });
  assert.deepEqual([unknown.body.type, unknown.body.error.type], ["error", "authentication_error"]);
  const tooMany = await api(app, "GET", "/anthropic/v1/models?limit=1001", undefined, { "x-api-key": "sk-gw-two" });
  assert.deepEqual([tooMany.status, tooMany.body.error.type], [400, "invalid_request_error"]);
  const empty = await api(app, "GET", "/anthropic/v1/models", undefined, { "x-api-key": "sk-gw-blocked" });
  assert.deepEqual(empty.body, { data: [], has_more: false, first_id: null, last_id: null });
});
