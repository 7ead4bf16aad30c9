/**
 * The response cache through the real app and the official `openai` SDK: direct hits (JSON and streams),
 * misses on changed parameters, ttl expiry on a fake clock, hits that spend no budget and count in
 * gw_cache_hits_total but not in the usage metrics, semantic hits and misses over a mock embeddings
 * upstream with pgvector, and the 400s of bad settings and headers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockEmbeddings, type MockEmbeddings } from "../fixtures/mock-embeddings.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startSseUpstream, type SseUpstream } from "../fixtures/sse-upstream.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";
import { errorType, fileKey, readChatStream, refusal, sdk } from "../helpers/inference.js";

let openai: MockUpstream;
let now = Date.UTC(2026, 0, 1);

const ALL_OPENAI = [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }];

function chatOf(app: TestApp, key: string): OpenAI {
  return sdk(app, key);
}

/** A chat completion and the x-gw-cache header it came with. */
async function ask(client: OpenAI, content: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<{ text: string; cache: string | null }> {
  const { data, response } = await client.chat.completions
    .create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content }], ...extra }, { headers })
    .withResponse();
  return { text: data.choices[0]?.message.content ?? "", cache: response.headers.get("x-gw-cache") };
}

async function storedCount(app: TestApp): Promise<number> {
  const rows: { n: string | number }[] = await app.store.fork().getConnection().execute("select count(*) as n from response_cache_entry");
  return Number(rows[0]?.n ?? 0);
}

/** Waits until the table holds at least `count` entries: answers reach the database in the background. */
async function storedEntries(app: TestApp, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await storedCount(app)) < count) {
    assert.ok(Date.now() < deadline, `fewer than ${count} cached answers reached the database`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function metrics(app: TestApp): Promise<ReturnType<typeof parseExposition>> {
  return parseExposition(await (await fetch(`${app.url}/metrics`)).text());
}

before(async () => {
  openai = await startMockOpenAi();
});

after(async () => {
  await openai?.close();
});

describe("direct cache", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({
      inference: {
        ...inferenceOptionsFromFile({ openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: openai.url } } }, [
          { id: "vk-direct", name: "direct", value: "sk-gw-direct", provider_configs: ALL_OPENAI, cache: { mode: "direct", ttl: "1h" } },
          // One mock chat costs about 3.5e-6 USD at gpt-4o-mini prices: two fresh answers spend this budget.
          { id: "vk-budget", name: "budget", value: "sk-gw-budget", provider_configs: ALL_OPENAI, cache: { mode: "direct" }, budget: { max_limit: 0.000005, reset_duration: "1d" } },
          { id: "vk-plain", name: "plain", value: "sk-gw-plain", provider_configs: ALL_OPENAI },
          { id: "vk-limited", name: "limited", value: "sk-gw-limited", provider_configs: ALL_OPENAI, cache: { mode: "direct" }, rate_limit: { request_max_limit: 2, request_reset_duration: "1h" } },
        ]),
        clock: () => now,
      },
    });
  });

  after(async () => {
    await app?.stop();
  });

  test("a repeated request is answered from the cache without calling the provider", async () => {
    const client = chatOf(app, "sk-gw-direct");
    const first = await ask(client, "repeat after me");
    const calls = openai.requests.length;
    const second = await ask(client, "repeat after me");
    assert.equal(first.cache, "miss");
    assert.equal(second.cache, "hit-direct");
    assert.equal(second.text, first.text);
    assert.equal(openai.requests.length, calls);
  });

  test("a repeated Responses API request is answered from the cache", async () => {
    const client = chatOf(app, "sk-gw-direct");
    const request = { model: "openai/gpt-4o-mini", input: "respond once" };
    const first = await client.responses.create(request).withResponse();
    const calls = openai.requests.length;
    const second = await client.responses.create(request).withResponse();
    assert.equal(first.response.headers.get("x-gw-cache"), "miss");
    assert.equal(second.response.headers.get("x-gw-cache"), "hit-direct");
    assert.equal(second.data.output_text, first.data.output_text);
    assert.equal(openai.requests.length, calls);
  });

  test("a repeated Anthropic Messages request is answered from the cache", async () => {
    const send = () =>
      fetch(`${app.url}/anthropic/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-gw-direct" },
        body: JSON.stringify({ model: "openai/gpt-4o-mini", max_tokens: 50, messages: [{ role: "user", content: "message once" }] }),
      });
    const first = await send();
    const firstBody = await first.json();
    const calls = openai.requests.length;
    const second = await send();
    assert.equal(first.headers.get("x-gw-cache"), "miss");
    assert.equal(second.headers.get("x-gw-cache"), "hit-direct");
    assert.deepEqual(await second.json(), firstBody);
    assert.equal(openai.requests.length, calls);
  });

  test("a request whose parameters differ misses", async () => {
    const client = chatOf(app, "sk-gw-direct");
    await ask(client, "parameters matter", { temperature: 0.1 });
    const calls = openai.requests.length;
    const changed = await ask(client, "parameters matter", { temperature: 0.9 });
    assert.equal(changed.cache, "miss");
    assert.equal(openai.requests.length, calls + 1);
  });

  test("the user field does not split the cache", async () => {
    const client = chatOf(app, "sk-gw-direct");
    await ask(client, "who asks does not matter", { user: "alice" });
    assert.equal((await ask(client, "who asks does not matter", { user: "bob" })).cache, "hit-direct");
  });

  test("an entry expires after the ttl the request set", async () => {
    const client = chatOf(app, "sk-gw-direct");
    await ask(client, "short lived", {}, { "x-gw-cache-ttl": "30s" });
    assert.equal((await ask(client, "short lived")).cache, "hit-direct");
    now += 31_000;
    const calls = openai.requests.length;
    assert.equal((await ask(client, "short lived")).cache, "miss");
    assert.equal(openai.requests.length, calls + 1);
  });

  test("a streamed answer is replayed as the same stream", async () => {
    const client = chatOf(app, "sk-gw-direct");
    const request = { model: "openai/gpt-4o-mini", messages: [{ role: "user" as const, content: "stream me a few words" }], stream: true as const };
    const first = await client.chat.completions.create(request).withResponse();
    const fresh = await readChatStream(first.data);
    const calls = openai.requests.length;
    const second = await client.chat.completions.create(request).withResponse();
    const replayed = await readChatStream(second.data);
    assert.equal(first.response.headers.get("x-gw-cache"), "miss");
    assert.equal(second.response.headers.get("x-gw-cache"), "hit-direct");
    assert.equal(replayed.text, fresh.text);
    assert.equal(replayed.finish, "stop");
    assert.equal(openai.requests.length, calls);
  });

  test("a streamed answer does not answer the same request without stream", async () => {
    const client = chatOf(app, "sk-gw-direct");
    const stream = await client.chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "streams stay streams" }], stream: true });
    await readChatStream(stream);
    assert.equal((await ask(client, "streams stay streams")).cache, "miss");
  });

  test("hits spend nothing from the key's budget", async () => {
    const client = chatOf(app, "sk-gw-budget");
    assert.equal((await ask(client, "budget one")).cache, "miss");
    for (let i = 0; i < 3; i++) assert.equal((await ask(client, "budget one")).cache, "hit-direct");
    // Had the hits been charged, the budget would be spent by now.
    assert.equal((await ask(client, "budget two")).cache, "miss");
    const err = await refusal(ask(client, "budget three"));
    assert.equal(err.status, 402);
  });

  test("a hit still counts against the key's request rate limit", async () => {
    const client = chatOf(app, "sk-gw-limited");
    assert.equal((await ask(client, "limited one")).cache, "miss");
    assert.equal((await ask(client, "limited one")).cache, "hit-direct");
    const err = await refusal(ask(client, "limited one"));
    assert.equal(err.status, 429);
  });

  test("a hit counts in gw_cache_hits_total and not in the token and cost metrics", async () => {
    const client = chatOf(app, "sk-gw-direct");
    await ask(client, "count me once");
    const before = await metrics(app);
    await ask(client, "count me once");
    const afterHit = await metrics(app);
    const hits = (samples: typeof before) => total(samples, "gw_cache_hits_total", { cache_type: "direct", virtual_key_id: "vk-direct" });
    assert.equal(hits(afterHit) - hits(before), 1);
    assert.equal(total(afterHit, "gw_input_tokens_total"), total(before, "gw_input_tokens_total"));
    assert.equal(total(afterHit, "gw_cost_total"), total(before, "gw_cost_total"));
  });

  test("a key without cache settings caches only when the request asks", async () => {
    const client = chatOf(app, "sk-gw-plain");
    await ask(client, "opt in per request");
    assert.equal((await ask(client, "opt in per request")).cache, null);
    await ask(client, "opt in per request", {}, { "x-gw-cache": "direct" });
    assert.equal((await ask(client, "opt in per request", {}, { "x-gw-cache": "direct" })).cache, "hit-direct");
  });

  test("x-gw-cache: off bypasses a key's cache", async () => {
    const client = chatOf(app, "sk-gw-direct");
    await ask(client, "no cache for me");
    const calls = openai.requests.length;
    const answer = await ask(client, "no cache for me", {}, { "x-gw-cache": "off" });
    assert.equal(answer.cache, null);
    assert.equal(openai.requests.length, calls + 1);
  });

  test("entries are not shared between virtual keys", async () => {
    await ask(chatOf(app, "sk-gw-direct"), "my own answers");
    assert.equal((await ask(chatOf(app, "sk-gw-plain"), "my own answers", {}, { "x-gw-cache": "direct" })).cache, "miss");
  });

  test("a cached answer survives a restart", async () => {
    const client = chatOf(app, "sk-gw-direct");
    const stored = await storedCount(app);
    await ask(client, "remember me across restarts");
    await storedEntries(app, stored + 1);
    await app.stop({ keepData: true });
    app = await startApp(app.restartOptions);
    const calls = openai.requests.length;
    assert.equal((await ask(chatOf(app, "sk-gw-direct"), "remember me across restarts")).cache, "hit-direct");
    assert.equal(openai.requests.length, calls);
  });
});

describe("cache settings", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({
      inference: inferenceOptionsFromFile({ openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: openai.url } } }, [
        { id: "vk-settings", name: "settings", value: "sk-gw-settings", provider_configs: ALL_OPENAI },
      ]),
    });
  });

  after(async () => {
    await app?.stop();
  });

  for (const [cache, field] of [
    [{ mode: "direct", threshold: 1.5 }, "cache.threshold"],
    [{ mode: "direct", threshold: 0 }, "cache.threshold"],
    [{ mode: "direct", ttl: "0s" }, "cache.ttl"],
    [{ mode: "direct", ttl: "soon" }, "cache.ttl"],
    [{ mode: "direct", ttl: "400d" }, "cache.ttl"],
    [{ mode: "sometimes" }, "cache.mode"],
  ] as const) {
    test(`a key with cache ${JSON.stringify(cache)} is refused naming ${field}`, async () => {
      const res = await api(app, "POST", "/api/governance/virtual-keys", { name: `bad-${JSON.stringify(cache)}`, provider_configs: ALL_OPENAI, cache });
      assert.equal(res.status, 400);
      assert.match(res.body.error.message, new RegExp(field.replace(".", "\\.")));
    });
  }

  test("a key's cache settings read back with their defaults filled in", async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "cached", provider_configs: ALL_OPENAI, cache: { mode: "direct" } });
    assert.equal(created.status, 200);
    const read = await api(app, "GET", `/api/governance/virtual-keys/${created.body.virtual_key.id}`);
    assert.deepEqual(read.body.virtual_key.cache, { mode: "direct", ttl: "1h", threshold: 0.95 });
    const changed = await api(app, "PUT", `/api/governance/virtual-keys/${created.body.virtual_key.id}`, { cache: { mode: "off", ttl: "10m" } });
    assert.equal(changed.status, 200);
    assert.deepEqual(changed.body.virtual_key.cache, { mode: "off", ttl: "10m", threshold: 0.95 });
  });

  for (const [header, value] of [
    ["x-gw-cache", "sometimes"],
    ["x-gw-cache-ttl", "soon"],
    ["x-gw-cache-ttl", "0s"],
  ] as const) {
    test(`a request with ${header}: ${value} is refused naming the header`, async () => {
      const err = await refusal(ask(chatOf(app, "sk-gw-settings"), "bad header", {}, { [header]: value }));
      assert.equal(err.status, 400);
      assert.equal(errorType(err), "caller_invalid_request");
      assert.equal((err.error as { param?: unknown }).param, header);
    });
  }

  test("asking for semantic caching without an embedding model is refused", async () => {
    const err = await refusal(ask(chatOf(app, "sk-gw-settings"), "semantic please", {}, { "x-gw-cache": "semantic" }));
    assert.equal(err.status, 400);
    assert.match(err.message, /x-gw-cache/);
    const res = await api(app, "POST", "/api/governance/virtual-keys", { name: "semantic", provider_configs: ALL_OPENAI, cache: { mode: "semantic" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /cache\.mode/);
  });
});

describe("semantic cache", () => {
  let embeddings: MockEmbeddings;
  let app: TestApp | undefined;
  /** Why the app did not start: only a server without pgvector may refuse it. */
  let startError: unknown = null;

  function options() {
    return {
      cache: { embedding: { provider: "mistral", model: "mistral-embed" } },
      inference: inferenceOptionsFromFile(
        {
          openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: openai.url } },
          mistral: { keys: [fileKey("mi", { models: ["mistral-embed"] })], network_config: { base_url: embeddings.url } },
        },
        [{ id: "vk-semantic", name: "semantic", value: "sk-gw-semantic", provider_configs: ALL_OPENAI, cache: { mode: "semantic", threshold: 0.9 } }],
      ),
    };
  }

  before(async () => {
    embeddings = await startMockEmbeddings();
    embeddings.vectors.set("What is the capital of France?", [1, 0, 0, 0]);
    embeddings.vectors.set("Tell me the capital of France.", [0.98, 0.2, 0, 0]);
    embeddings.vectors.set("What is the capital of Italy?", [0.6, 0.8, 0, 0]);
    app = await startApp(options()).catch((err: unknown) => {
      startError = err;
      return undefined;
    });
    // PGlite ships pgvector: there the start must succeed.
    if (!testDatabaseUrl && startError !== null) throw startError;
  });

  /** The started app, or null (and the test skipped) on a server without pgvector. */
  function semanticApp(t: { skip(message: string): void }): TestApp | null {
    if (app !== undefined) return app;
    t.skip("the PostgreSQL server has no pgvector; the start refusal is tested instead");
    return null;
  }

  after(async () => {
    await app?.stop();
    await embeddings?.close();
  });

  test("a question close enough in meaning is answered from the cache", async (t) => {
    const app = semanticApp(t);
    if (app === null) return;
    const client = chatOf(app, "sk-gw-semantic");
    const first = await ask(client, "What is the capital of France?");
    assert.equal(first.cache, "miss");
    await storedEntries(app, 1);
    const calls = openai.requests.length;
    const close = await ask(client, "Tell me the capital of France.");
    assert.equal(close.cache, "hit-semantic");
    assert.equal(close.text, first.text);
    assert.equal(openai.requests.length, calls);
    const samples = await metrics(app);
    assert.equal(total(samples, "gw_cache_hits_total", { cache_type: "semantic" }), 1);
  });

  test("a question below the similarity threshold misses", async (t) => {
    const app = semanticApp(t);
    if (app === null) return;
    const client = chatOf(app, "sk-gw-semantic");
    await ask(client, "What is the capital of France?");
    await storedEntries(app, 1);
    // cos([1,0,0,0], [0.6,0.8,0,0]) = 0.6, under the key's 0.9.
    const calls = openai.requests.length;
    assert.equal((await ask(client, "What is the capital of Italy?")).cache, "miss");
    assert.equal(openai.requests.length, calls + 1);
  });

  test("a close question with other parameters misses", async (t) => {
    const app = semanticApp(t);
    if (app === null) return;
    const client = chatOf(app, "sk-gw-semantic");
    await ask(client, "What is the capital of France?");
    await storedEntries(app, 1);
    assert.equal((await ask(client, "Tell me the capital of France.", { temperature: 0.3 })).cache, "miss");
  });

  test("semantic caching configured on a server without pgvector stops the start with a clear error", async (t) => {
    if (app !== undefined) return t.skip("this database has pgvector");
    assert.match(String((startError as Error).message), /cache\.mode: semantic caching needs the pgvector extension/);
  });
});

describe("default embedding model", () => {
  let embeddings: MockEmbeddings;

  before(async () => {
    embeddings = await startMockEmbeddings();
    embeddings.vectors.set("What is the capital of Spain?", [1, 0, 0, 0]);
    embeddings.vectors.set("Tell me the capital of Spain.", [0.99, 0.1, 0, 0]);
  });

  after(async () => {
    await embeddings?.close();
  });

  /** Chat through openai; mistral's key serves only its embedding model, and no cache.embedding is set. */
  function options(semanticKey: boolean, withEmbeddings: boolean) {
    return {
      inference: inferenceOptionsFromFile(
        {
          openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: openai.url } },
          ...(withEmbeddings ? { mistral: { keys: [fileKey("mi", { models: ["mistral-embed"] })], network_config: { base_url: embeddings.url } } } : {}),
        },
        [{ id: "vk-default-embed", name: "default-embed", value: "sk-gw-default-embed", provider_configs: ALL_OPENAI, cache: { mode: semanticKey ? "semantic" : "direct", threshold: 0.9 } }],
      ),
    };
  }

  test("without cache.embedding a semantic key embeds with the catalog's embedding model of a configured provider", async (t) => {
    let app: TestApp;
    try {
      app = await startApp(options(true, true));
    } catch (err) {
      // PGlite ships pgvector; only a server without it may refuse the start.
      if (testDatabaseUrl && /pgvector/.test(String((err as Error).message))) return t.skip("the PostgreSQL server has no pgvector");
      throw err;
    }
    try {
      const client = chatOf(app, "sk-gw-default-embed");
      assert.equal((await ask(client, "What is the capital of Spain?")).cache, "miss");
      await storedEntries(app, 1);
      assert.equal((await ask(client, "Tell me the capital of Spain.")).cache, "hit-semantic");
      assert.equal(embeddings.requests.at(-1)?.body?.["model"], "mistral-embed");
    } finally {
      await app.stop();
    }
  });

  test("a config-file key in semantic mode with no embedding model anywhere stops the start naming the key", async () => {
    await assert.rejects(startApp(options(true, false)), /governance\.virtual_keys\[0\]\.cache\.mode: semantic caching needs an embedding model: set cache\.embedding/);
  });

  test("without any embedding model a request asking for semantic caching is refused with what to configure", async () => {
    const app = await startApp(options(false, false));
    try {
      const err = await refusal(ask(chatOf(app, "sk-gw-default-embed"), "semantic please", {}, { "x-gw-cache": "semantic" }));
      assert.equal(err.status, 400);
      assert.match(err.message, /x-gw-cache: semantic caching needs an embedding model: set cache\.embedding .* or configure a provider/);
    } finally {
      await app.stop();
    }
  });
});

describe("a stream holding a chunk that is not JSON", () => {
  const good = JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta: { content: "fine" }, finish_reason: null }] });
  // Braced like a chunk, so the gateway passes it on unparsed; only the caller's parser can tell.
  const broken = '{"id":"c","choices":[oops]}';
  let upstream: SseUpstream;
  let app: TestApp;

  before(async () => {
    upstream = await startSseUpstream([good, broken, "[DONE]"]);
    app = await startApp({
      inference: inferenceOptionsFromFile({ openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: upstream.url } } }, [
        { id: "vk-broken", name: "broken", value: "sk-gw-broken", provider_configs: ALL_OPENAI, cache: { mode: "direct" } },
      ]),
    });
  });

  after(async () => {
    await app?.stop();
    await upstream?.close();
  });

  async function streamOnce(): Promise<{ body: string; cache: string | null }> {
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-gw-broken", "content-type": "application/json" },
      body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "broken" }], stream: true }),
    });
    assert.equal(res.status, 200);
    return { body: await res.text(), cache: res.headers.get("x-gw-cache") };
  }

  test("reaches the caller exactly as the upstream sent it", async () => {
    const { body } = await streamOnce();
    assert.ok(body.includes(`data: ${broken}\n\n`), body);
    assert.ok(body.includes(`data: ${good}\n\n`), body);
  });

  test("is not kept in the cache", async () => {
    await streamOnce();
    const before = upstream.calls;
    const again = await streamOnce();
    assert.equal(again.cache, "miss");
    assert.equal(upstream.calls, before + 1);
    assert.equal(await storedCount(app), 0);
  });
});
