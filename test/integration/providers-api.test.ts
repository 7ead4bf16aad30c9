/**
 * The provider admin API (/api/v1/providers) through the real app: writes are checked, persisted with
 * encrypted key values, applied to /v1 at once, followed by a list-models fetch, and never show a key.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import OpenAI from "openai";
import { ProviderService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { ProviderRecord } from "../../src/store/index.js";
import { MOCK_OPENAI_MODELS, startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

let upstream: MockUpstream;
let app: TestApp;

function openaiProvider(extra: Record<string, unknown> = {}) {
  return {
    name: "openai",
    keys: [{ id: "k1", name: "main", value: "sk-upstream-secret-1", models: [], weight: 1 }],
    network_config: { base_url: upstream.url },
    ...extra,
  };
}

function chat(model = "openai/gpt-4o-mini") {
  return api(app, "POST", "/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] });
}

before(async () => {
  upstream = await startMockOpenAi();
  app = await startApp();
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

describe("POST /api/v1/providers", () => {
  after(async () => {
    await api(app, "DELETE", "/api/v1/providers/openai");
  });

  test("creates a provider that /v1 serves at once, without a restart", async () => {
    const created = await api(app, "POST", "/api/v1/providers", openaiProvider());
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const res = await chat();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(upstream.last().headers["authorization"], "Bearer sk-upstream-secret-1");
  });

  test("never returns a key value, on create, get or list", async () => {
    const got = await api(app, "GET", "/api/v1/providers/openai");
    assert.equal(got.status, 200);
    assert.equal(got.body.provider.keys[0].value, "<redacted>");
    const listed = await api(app, "GET", "/api/v1/providers");
    assert.doesNotMatch(JSON.stringify(listed.body), /sk-upstream-secret/);
  });

  test("keeps key values encrypted at rest", async () => {
    const rows = await app.store.fork().getConnection().execute(`select "keys" from "provider" where "name" = 'openai'`);
    assert.equal(rows.length, 1);
    assert.doesNotMatch(JSON.stringify(rows), /sk-upstream-secret/);
    const rec = await app.store.fork().findOneOrFail(ProviderRecord, { name: "openai" });
    assert.equal(rec.keys[0]?.["value"], "sk-upstream-secret-1");
  });

  test("fetches the provider's models after the write", async () => {
    const models = await api(app, "GET", "/v1/models?provider=openai");
    assert.equal(models.status, 200);
    const ids = models.body.data.map((m: { id: string }) => m.id);
    for (const model of MOCK_OPENAI_MODELS) assert.ok(ids.includes(`openai/${model}`), `${model} missing from ${ids.join(", ")}`);
    assert.ok(upstream.requests.some((r) => r.method === "GET" && r.path === "/v1/models"));
  });

  test("refuses a second provider of the same name with a 409", async () => {
    const res = await api(app, "POST", "/api/v1/providers", openaiProvider());
    assert.equal(res.status, 409);
  });
});

describe("POST /api/v1/providers with Bifrost's body", () => {
  afterEach(async () => {
    await api(app, "DELETE", "/api/v1/providers/openai");
  });

  test("creates the provider that the body's provider field names", async () => {
    const { name: _name, ...rest } = openaiProvider();
    const created = await api(app, "POST", "/api/v1/providers", { provider: "openai", ...rest });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.provider.name, "openai");
    assert.equal((await chat()).status, 200);
  });

  test("shows the provider by name only on reads", async () => {
    const { name: _name, ...rest } = openaiProvider();
    assert.equal((await api(app, "POST", "/api/v1/providers", { provider: "openai", ...rest })).status, 200);
    const got = await api(app, "GET", "/api/v1/providers/openai");
    assert.equal(got.body.provider.name, "openai");
    assert.equal("provider" in got.body.provider, false);
  });

  test("accepts provider and name together when they agree", async () => {
    const res = await api(app, "POST", "/api/v1/providers", openaiProvider({ provider: "openai" }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test("refuses provider and name that disagree with a 400 naming provider.provider", async () => {
    const res = await api(app, "POST", "/api/v1/providers", openaiProvider({ provider: "groq" }));
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^provider\.provider: /);
    assert.equal((await api(app, "GET", "/api/v1/providers/openai")).status, 404);
  });

  test("refuses a body that names no provider with a 400 naming provider.name", async () => {
    const { name: _name, ...rest } = openaiProvider();
    const res = await api(app, "POST", "/api/v1/providers", rest);
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^provider\.name: is required/);
  });

  test("takes an update that sends the provider field back unchanged", async () => {
    assert.equal((await api(app, "POST", "/api/v1/providers", openaiProvider())).status, 200);
    const res = await api(app, "PUT", "/api/v1/providers/openai", { provider: "openai", keys: [{ id: "k1", name: "main", value: "sk-bifrost" }] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal((await chat()).status, 200);
    assert.equal(upstream.last().headers["authorization"], "Bearer sk-bifrost");
  });

  test("refuses an update whose provider field renames the provider", async () => {
    assert.equal((await api(app, "POST", "/api/v1/providers", openaiProvider())).status, 200);
    const res = await api(app, "PUT", "/api/v1/providers/openai", { provider: "groq" });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^provider: is immutable/);
  });
});

describe("provider validation", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["a name with a slash", { name: "my/provider", keys: [], network_config: { base_url: "http://127.0.0.1:1" } }, /name/],
    ["azure without azure_key_config", { name: "azure", keys: [{ id: "a", name: "a", value: "x" }] }, /keys\[0\]\.azure_key_config/],
    ["a custom provider without base_url", { name: "acme", keys: [{ id: "a", name: "a", value: "x" }] }, /network_config\.base_url/],
    ["a negative key weight", { name: "groq", keys: [{ id: "a", name: "a", value: "x", weight: -2 }] }, /keys\[0\]\.weight/],
    ["a key without a value", { name: "groq", keys: [{ id: "a", name: "a" }] }, /keys\[0\]\.value/],
    ["duplicate key ids", { name: "groq", keys: [{ id: "a", name: "a", value: "x" }, { id: "a", name: "b", value: "y" }] }, /keys\[1\]\.id/],
    ["a base_url that is not http", { name: "groq", keys: [], network_config: { base_url: "ftp://x" } }, /base_url/],
    ["a base_url holding a line break", { name: "groq", keys: [], network_config: { base_url: "http://127.0.0.1:1/\r\nv1" } }, /network_config\.base_url: .* contains whitespace or control characters/],
    ["a key value holding a line break", { name: "groq", keys: [{ id: "a", name: "a", value: "sk-a\r\nx-injected: 1" }] }, /keys\[0\]\.value: must not contain line breaks or NUL characters/],
    ["max_retries", { name: "groq", keys: [], network_config: { max_retries: 3 } }, /max_retries/],
    ["a concurrency of 0", { name: "groq", keys: [], concurrency_and_buffer_size: { buffer_size: 5 } }, /^provider\.concurrency_and_buffer_size\.concurrency: must be a whole number >= 1/],
    ["a negative buffer_size", { name: "groq", keys: [], concurrency_and_buffer_size: { concurrency: 2, buffer_size: -1 } }, /^provider\.concurrency_and_buffer_size\.buffer_size: must be a whole number >= 0/],
  ];
  for (const [what, body, field] of cases) {
    test(`refuses ${what} with a 400 naming the field`, async () => {
      const res = await api(app, "POST", "/api/v1/providers", body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, field);
      assert.equal((await api(app, "GET", `/api/v1/providers/${encodeURIComponent(String(body["name"]))}`)).status, 404);
    });
  }
});

describe("PUT /api/v1/providers/{provider}", () => {
  before(async () => {
    assert.equal((await api(app, "POST", "/api/v1/providers", openaiProvider())).status, 200);
  });
  after(async () => {
    await api(app, "DELETE", "/api/v1/providers/openai");
  });

  test("keeps a stored key value sent back as <redacted>", async () => {
    const got = await api(app, "GET", "/api/v1/providers/openai");
    const keys = [...got.body.provider.keys, { id: "k2", name: "second", value: "sk-upstream-secret-2", weight: 0 }];
    const res = await api(app, "PUT", "/api/v1/providers/openai", { keys });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal((await chat()).status, 200);
    // Weight 0 leaves the new key unused, so the first key's stored value must still be sent.
    assert.equal(upstream.last().headers["authorization"], "Bearer sk-upstream-secret-1");
  });

  test("applies a new key value to /v1 at once", async () => {
    const res = await api(app, "PUT", "/api/v1/providers/openai", { keys: [{ id: "k1", name: "main", value: "sk-rotated" }] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal((await chat()).status, 200);
    assert.equal(upstream.last().headers["authorization"], "Bearer sk-rotated");
  });

  test("refuses renaming a provider", async () => {
    const res = await api(app, "PUT", "/api/v1/providers/openai", { name: "other" });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /name/);
  });

  test("answers 404 for a provider that does not exist", async () => {
    assert.equal((await api(app, "PUT", "/api/v1/providers/nope", { keys: [] })).status, 404);
  });
});

describe("DELETE /api/v1/providers/{provider}", () => {
  test("stops /v1 from serving the provider at once", async () => {
    assert.equal((await api(app, "POST", "/api/v1/providers", openaiProvider())).status, 200);
    assert.equal((await api(app, "DELETE", "/api/v1/providers/openai")).status, 200);
    const res = await chat();
    assert.equal(res.status, 400);
    assert.equal((await api(app, "GET", "/api/v1/providers/openai")).status, 404);
  });
});

describe("models refetch and clear", () => {
  // A custom provider: the bundled table knows none of its models, so only list-models fills them.
  before(async () => {
    assert.equal((await api(app, "POST", "/api/v1/providers", { name: "acme", keys: [{ id: "a", name: "a", value: "sk-a" }], network_config: { base_url: upstream.url } })).status, 200);
  });
  after(async () => {
    await api(app, "DELETE", "/api/v1/providers/acme");
  });

  async function acmeModels(): Promise<string[]> {
    const res = await api(app, "GET", "/v1/models?provider=acme");
    assert.equal(res.status, 200);
    return res.body.data.map((m: { id: string }) => m.id).sort();
  }

  test("clear drops the listed models and refetch brings them back", async () => {
    assert.deepEqual(await acmeModels(), MOCK_OPENAI_MODELS.map((m) => `acme/${m}`).sort());
    assert.equal((await api(app, "DELETE", "/api/v1/providers/acme/models")).status, 200);
    assert.deepEqual(await acmeModels(), []);
    const refetched = await api(app, "POST", "/api/v1/providers/acme/models/refetch");
    assert.equal(refetched.status, 200, JSON.stringify(refetched.body));
    assert.equal(refetched.body.models_count, MOCK_OPENAI_MODELS.length);
    assert.deepEqual(await acmeModels(), MOCK_OPENAI_MODELS.map((m) => `acme/${m}`).sort());
  });

  test("refetch of an unreachable provider answers 503 naming the provider", async () => {
    assert.equal((await api(app, "POST", "/api/v1/providers", { name: "groq", keys: [{ id: "g", name: "g", value: "x" }], network_config: { base_url: "http://127.0.0.1:9" } })).status, 200);
    const res = await api(app, "POST", "/api/v1/providers/groq/models/refetch");
    assert.equal(res.status, 503);
    assert.match(res.body.error.message, /groq/);
    await api(app, "DELETE", "/api/v1/providers/groq");
  });
});

test("answers 404 for the models of a provider that is not configured", async () => {
  assert.equal((await api(app, "GET", "/v1/models?provider=nope")).status, 404);
});

test("the provider API works over gRPC with the same rules", async () => {
  const client = clientFor(ProviderService, app.url, "grpc");
  const created = await client.createProvider({ provider: { name: "mistral", keys: [{ id: "m", name: "m", value: "sk-m" }], networkConfig: { baseUrl: upstream.url } } });
  assert.equal(created.provider?.keys[0]?.value, "<redacted>");
  await assert.rejects(client.createProvider({ provider: { name: "mistral" } }), /already exists/);
  await client.deleteProvider({ name: "mistral" });
});

test("providers survive a restart", async () => {
  let first: TestApp | undefined = await startApp();
  try {
    assert.equal((await api(first, "POST", "/api/v1/providers", openaiProvider())).status, 200);
    await first.stop({ keepData: true });
    const second = await startApp(first.restartOptions);
    first = second;
    // No credential at all: routed without governance.
    const sdk = new OpenAI({ apiKey: "unused", baseURL: `${second.url}/v1`, maxRetries: 0, defaultHeaders: { authorization: null } });
    const completion = await sdk.chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "after restart" }] });
    assert.equal(completion.choices[0]?.message.content, "echo: after restart");
  } finally {
    await first?.stop();
  }
});
