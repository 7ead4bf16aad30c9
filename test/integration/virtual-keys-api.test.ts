/**
 * The virtual-key admin API (/api/governance/virtual-keys) through the real app: values shown once,
 * every write checked with the field named, persisted, and applied to /v1 at once.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";
import { clientFor } from "../helpers/clients.js";

let upstream: MockUpstream;
let app: TestApp;

const OPENAI = { provider: "openai", allowed_models: ["*"], key_ids: ["*"] };

function providers() {
  return { openai: { keys: [fileKey("k1", { value: "sk-up" })], network_config: { base_url: upstream.url } } };
}

function chat(vk: string, model = "openai/gpt-4o-mini") {
  return api(app, "POST", "/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] }, { "x-gw-vk": vk });
}

before(async () => {
  upstream = await startMockOpenAi();
  app = await startApp({ inference: inferenceOptionsFromFile(providers(), []) });
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

describe("creating a virtual key", () => {
  test("shows a generated value once, and /v1 accepts it at once", async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "team-a", provider_configs: [OPENAI] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const key = created.body.virtual_key;
    assert.match(key.value, /^sk-gw-/);
    assert.equal(key.is_active, true);
    assert.equal(key.provider_configs[0].weight, 1);
    const res = await chat(key.value);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const got = await api(app, "GET", `/api/governance/virtual-keys/${key.id}`);
    assert.equal(got.body.virtual_key.value, "<redacted>");
    const listed = await api(app, "GET", "/api/governance/virtual-keys");
    assert.doesNotMatch(JSON.stringify(listed.body), new RegExp(key.value));
  });

  test("is read from the x-goog-api-key header as well", async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "goog", provider_configs: [OPENAI] });
    const res = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, { "x-goog-api-key": created.body.virtual_key.value });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test("keeps a given id and value", async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { id: "vk-given", name: "given", value: "sk-gw-given", provider_configs: [OPENAI] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.virtual_key.id, "vk-given");
    assert.equal((await chat("sk-gw-given")).status, 200);
  });

  const invalid: [string, Record<string, unknown>, RegExp][] = [
    ["a negative weight", { name: "w", provider_configs: [{ ...OPENAI, weight: -1 }] }, /provider_configs\[0\]\.weight/],
    ["an infinite-looking weight", { name: "w", provider_configs: [{ ...OPENAI, weight: "Infinity" }] }, /weight/],
    ["a bad budget duration", { name: "b", provider_configs: [{ ...OPENAI, budgets: [{ max_limit: 1, reset_duration: "soon" }] }] }, /budgets\[0\]\.reset_duration/],
    ["a negative budget", { name: "b", provider_configs: [{ ...OPENAI, budgets: [{ max_limit: -1, reset_duration: "1h" }] }] }, /budgets\[0\]\.max_limit/],
    ["a provider named twice", { name: "d", provider_configs: [OPENAI, OPENAI] }, /provider_configs\[1\]\.provider/],
    ["\"*\" mixed with model names", { name: "m", provider_configs: [{ ...OPENAI, allowed_models: ["*", "gpt-4o"] }] }, /allowed_models/],
    ["a key-wide budget of zero", { name: "k", budget: { max_limit: 0, reset_duration: "1h" } }, /budget\.max_limit/],
    ["a missing name", { provider_configs: [OPENAI] }, /name/],
    ["an id longer than 255 characters", { id: "k".repeat(300), name: "long-id" }, /id: is 300 characters long/],
    ["a name longer than 255 characters", { name: "n".repeat(256) }, /name: is 256 characters long/],
  ];
  for (const [what, body, field] of invalid) {
    test(`refuses ${what} with a 400 naming the field`, async () => {
      const res = await api(app, "POST", "/api/governance/virtual-keys", body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, field);
    });
  }

  test("refuses a name or value another key has with a 409", async () => {
    assert.equal((await api(app, "POST", "/api/governance/virtual-keys", { name: "given" })).status, 409);
    assert.equal((await api(app, "POST", "/api/governance/virtual-keys", { name: "fresh", value: "sk-gw-given" })).status, 409);
  });
});

describe("updating a virtual key", () => {
  let id: string;
  const value = "sk-gw-update-me";
  before(async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "updatable", value, provider_configs: [OPENAI] });
    id = created.body.virtual_key.id;
  });

  test("switching is_active off refuses the key on /v1 at once, and on again serves it", async () => {
    assert.equal((await api(app, "PUT", `/api/governance/virtual-keys/${id}`, { is_active: false })).status, 200);
    const refused = await chat(value);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.type, "policy_virtual_key_inactive");
    assert.equal((await api(app, "PUT", `/api/governance/virtual-keys/${id}`, { is_active: true })).status, 200);
    assert.equal((await chat(value)).status, 200);
  });

  test("new provider_configs apply to routing at once", async () => {
    assert.equal((await api(app, "PUT", `/api/governance/virtual-keys/${id}`, { provider_configs: [{ ...OPENAI, allowed_models: ["gpt-4o"] }] })).status, 200);
    const refused = await chat(value, "openai/gpt-4o-mini");
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.type, "caller_model_not_allowed");
    assert.equal((await chat(value, "openai/gpt-4o")).status, 200);
  });

  test("sending back <redacted> keeps the value", async () => {
    const got = await api(app, "GET", `/api/governance/virtual-keys/${id}`);
    const { created_at: _c, updated_at: _u, ...rest } = got.body.virtual_key;
    const res = await api(app, "PUT", `/api/governance/virtual-keys/${id}`, { ...rest, name: "renamed" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.virtual_key.name, "renamed");
    assert.equal((await chat(value, "openai/gpt-4o")).status, 200);
  });

  test("a new value retires the old one at once", async () => {
    assert.equal((await api(app, "PUT", `/api/governance/virtual-keys/${id}`, { value: "sk-gw-rotated" })).status, 200);
    assert.equal((await chat(value, "openai/gpt-4o")).status, 401);
    assert.equal((await chat("sk-gw-rotated", "openai/gpt-4o")).status, 200);
  });

  test("refuses changing the id", async () => {
    const res = await api(app, "PUT", `/api/governance/virtual-keys/${id}`, { id: "other" });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /id/);
  });

  test("answers 404 for a key that does not exist", async () => {
    assert.equal((await api(app, "PUT", "/api/governance/virtual-keys/nope", { name: "x" })).status, 404);
  });
});

test("deleting a virtual key makes /v1 refuse it at once", async () => {
  const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "doomed", provider_configs: [OPENAI] });
  const key = created.body.virtual_key;
  assert.equal((await chat(key.value)).status, 200);
  assert.equal((await api(app, "DELETE", `/api/governance/virtual-keys/${key.id}`)).status, 200);
  const refused = await chat(key.value);
  assert.equal(refused.status, 401);
  assert.equal((await api(app, "GET", `/api/governance/virtual-keys/${key.id}`)).status, 404);
});

test("the virtual-key API works over Connect with the same rules", async () => {
  const client = clientFor(GovernanceService, app.url, "connect");
  const created = await client.createVirtualKey({ virtualKey: { name: "over-connect", providerConfigs: [{ provider: "openai", allowedModels: ["*"], keyIds: ["*"] }] } });
  assert.match(created.virtualKey?.value ?? "", /^sk-gw-/);
  await assert.rejects(client.createVirtualKey({ virtualKey: { name: "bad", providerConfigs: [{ provider: "openai", weight: -1 }] } }), /weight/);
  const listed = await client.listVirtualKeys({});
  assert.ok(listed.virtualKeys.every((k) => k.value === "<redacted>"));
});

describe("config-file keys and restarts", () => {
  test("a key edited through the API keeps the edit across a restart with the same file", async () => {
    const file = inferenceOptionsFromFile(providers(), [{ id: "vk-file", name: "from-file", value: "sk-gw-file", provider_configs: [OPENAI] }]);
    let first: TestApp | undefined = await startApp({ inference: file });
    try {
      assert.equal((await api(first, "PUT", "/api/governance/virtual-keys/vk-file", { is_active: false })).status, 200);
      await first.stop({ keepData: true });
      first = await startApp(first.restartOptions);
      const res = await api(first, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "x" }] }, { "x-gw-vk": "sk-gw-file" });
      assert.equal(res.status, 403);
      const got = await api(first, "GET", "/api/governance/virtual-keys/vk-file");
      assert.equal(got.body.virtual_key.is_active, false);
    } finally {
      await first?.stop();
    }
  });

  test("a file key whose value another stored key has stops start-up naming the field", async () => {
    const file = inferenceOptionsFromFile(providers(), [{ id: "vk-one", name: "one", value: "sk-gw-same" }]);
    const first = await startApp({ inference: file });
    await first.stop({ keepData: true });
    const clash = inferenceOptionsFromFile(providers(), [{ id: "vk-two", name: "two", value: "sk-gw-same" }]);
    await assert.rejects(startApp({ ...first.restartOptions, inference: clash }), /governance\.virtual_keys\[0\]\.value/);
    const cleanup = await startApp(first.restartOptions);
    await cleanup.stop();
  });
});
