/** The response cache's keys and its memory: what splits or shares an entry, and what is evicted. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { directCacheKey, semanticParts } from "../../src/inference/cache-key.js";
import { ResponseCache, type CachePlan, type ResponseCacheLimits } from "../../src/inference/response-cache.js";
import type { VirtualKey } from "../../src/routing/types.js";
import type { ResponseCacheTable, StoredAnswer } from "../../src/store/index.js";
import { createLogger } from "../../src/telemetry/logger.js";

const BASE = { namespace: "vk-1", method: "chat", provider: "openai", model: "gpt-4o-mini" };
const body = (extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], temperature: 0.2, ...extra });

describe("direct cache key", () => {
  test("the order of the body's keys does not matter", () => {
    const a = directCacheKey({ ...BASE, body: { temperature: 0.2, messages: [{ content: "hi", role: "user" }], model: "gpt-4o-mini" } });
    assert.equal(a, directCacheKey({ ...BASE, body: body() }));
  });

  test("user, stream_options and fallbacks do not split the cache", () => {
    const plain = directCacheKey({ ...BASE, body: body({ stream: true }) });
    assert.equal(directCacheKey({ ...BASE, body: body({ stream: true, user: "alice", stream_options: { include_usage: true }, fallbacks: ["anthropic/claude"] }) }), plain);
  });

  test("a parameter, stream, the provider, the model and the namespace each split it", () => {
    const key = directCacheKey({ ...BASE, body: body() });
    assert.notEqual(directCacheKey({ ...BASE, body: body({ temperature: 0.3 }) }), key);
    assert.notEqual(directCacheKey({ ...BASE, body: body({ stream: true }) }), key);
    assert.notEqual(directCacheKey({ ...BASE, provider: "azure", body: body() }), key);
    assert.notEqual(directCacheKey({ ...BASE, model: "gpt-4o", body: body() }), key);
    assert.notEqual(directCacheKey({ ...BASE, namespace: "vk-2", body: body() }), key);
  });
});

describe("semantic parts", () => {
  test("the question is the last user message and the rest hashes the same whatever it says", () => {
    const a = semanticParts({ ...BASE, body: body({ messages: [{ role: "system", content: "be brief" }, { role: "user", content: "capital of France?" }] }) });
    const b = semanticParts({ ...BASE, body: body({ messages: [{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: "France's capital?" }] }] }) });
    assert.equal(a?.question, "capital of France?");
    assert.equal(b?.question, "France's capital?");
    assert.equal(a?.paramsHash, b?.paramsHash);
  });

  test("another system prompt or parameter changes the hash", () => {
    const a = semanticParts({ ...BASE, body: body({ messages: [{ role: "system", content: "be brief" }, { role: "user", content: "q" }] }) });
    const b = semanticParts({ ...BASE, body: body({ messages: [{ role: "system", content: "be long" }, { role: "user", content: "q" }] }) });
    const c = semanticParts({ ...BASE, body: body({ temperature: 1, messages: [{ role: "system", content: "be brief" }, { role: "user", content: "q" }] }) });
    assert.notEqual(a?.paramsHash, b?.paramsHash);
    assert.notEqual(a?.paramsHash, c?.paramsHash);
  });

  test("a Responses request's string input is the question", () => {
    assert.equal(semanticParts({ ...BASE, method: "responses", body: { model: "m", input: "hello" } })?.question, "hello");
  });

  test("a request without user text has no semantic parts", () => {
    assert.equal(semanticParts({ ...BASE, body: body({ messages: [{ role: "system", content: "only a system prompt" }] }) }), null);
  });
});

/** A cache over a table that counts its reads and holds nothing, on a clock the test moves. */
function cacheOnFakeTable(limits?: Partial<ResponseCacheLimits>): { cache: ResponseCache; reads: () => number; clock: { now: number } } {
  let reads = 0;
  const clock = { now: 1_000 };
  const table = {
    get: async (): Promise<StoredAnswer | null> => {
      reads++;
      return null;
    },
    put: async (): Promise<void> => {},
    sweep: async (): Promise<number> => 0,
  } as unknown as ResponseCacheTable;
  const cache = new ResponseCache({ table, logger: createLogger({ level: "silent" }), clock: () => clock.now, embedder: null, vectorSchema: null, ...(limits ? { limits } : {}) });
  return { cache, reads: () => reads, clock };
}

function keyNamed(id: string): VirtualKey {
  return { id, name: id, value: `sk-${id}`, isActive: true, providerConfigs: [], mcpConfigs: null, teamId: "", customerId: "", budget: null, rateLimit: null };
}

describe("response cache plans and memory", () => {
  const body = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };
  const text = JSON.stringify(body);
  const input = { method: "chat", provider: "openai", model: "gpt-4o-mini", body };

  test("the same request text under another virtual key gets that key's own cache key", () => {
    const { cache } = cacheOnFakeTable();
    const first = cache.plan(input, keyNamed("vk-a"), { mode: "direct", ttlMs: null }, text);
    const second = cache.plan(input, keyNamed("vk-b"), { mode: "direct", ttlMs: null }, text);
    const again = cache.plan(input, keyNamed("vk-a"), { mode: "direct", ttlMs: null }, text);
    assert.ok(first && second && again);
    assert.equal(second.key, directCacheKey({ ...input, namespace: "vk-b" }));
    assert.notEqual(first.key, second.key);
    assert.equal(again.key, first.key);
  });

  test("the same request text routed to another provider gets that provider's cache key", () => {
    const { cache } = cacheOnFakeTable();
    const openai = cache.plan(input, keyNamed("vk-a"), { mode: "direct", ttlMs: null }, text);
    const azure = cache.plan({ ...input, provider: "azure" }, keyNamed("vk-a"), { mode: "direct", ttlMs: null }, text);
    assert.ok(openai && azure);
    assert.equal(azure.key, directCacheKey({ ...input, provider: "azure", namespace: "vk-a" }));
    assert.notEqual(openai.key, azure.key);
  });

  test("a stored answer is recalled from memory without reading the table", async () => {
    const { cache, reads } = cacheOnFakeTable();
    const plan = cache.plan(input, keyNamed("vk-a"), { mode: "direct", ttlMs: null }, text);
    assert.ok(plan);
    assert.equal(cache.recall(plan), null);
    cache.store(plan, { kind: "json", body: { id: "answer" }, raw: '{"id":"answer"}' });
    assert.equal(cache.recall(plan)?.status, "hit-direct");
    assert.equal((await cache.lookup(plan, new AbortController().signal))?.status, "hit-direct");
    assert.equal(reads(), 0);
  });

  test("an expired answer is not recalled and the table is asked instead", async () => {
    const { cache, reads, clock } = cacheOnFakeTable();
    const plan = cache.plan(input, keyNamed("vk-a"), { mode: "direct", ttlMs: 1_000 }, text);
    assert.ok(plan);
    cache.store(plan, { kind: "json", body: { id: "answer" }, raw: '{"id":"answer"}' });
    clock.now += 1_000;
    assert.equal(cache.recall(plan), null);
    assert.equal(await cache.lookup(plan, new AbortController().signal), null);
    assert.equal(reads(), 1);
  });
});

describe("response cache memory bounds", () => {
  /** A direct plan of its own for each name. */
  const planFor = (cache: ResponseCache, name: string): CachePlan => {
    const body = { model: "m", messages: [{ role: "user", content: name }] };
    const plan = cache.plan({ method: "chat", provider: "openai", model: "m", body }, keyNamed("vk-a"), { mode: "direct", ttlMs: null }, JSON.stringify(body));
    assert.ok(plan);
    return plan;
  };
  const answer = (raw: string) => ({ kind: "json" as const, body: {}, raw });
  const held = (cache: ResponseCache, plans: CachePlan[]): boolean[] => plans.map((plan) => cache.recall(plan) !== null);

  test("evicts the least recently recalled answer beyond memoryEntries", () => {
    const { cache } = cacheOnFakeTable({ memoryEntries: 2 });
    const [a, b, c] = ["a", "b", "c"].map((name) => planFor(cache, name)) as [CachePlan, CachePlan, CachePlan];
    cache.store(a, answer("{}"));
    cache.store(b, answer("{}"));
    assert.ok(cache.recall(a));
    cache.store(c, answer("{}"));
    assert.deepEqual(held(cache, [a, b, c]), [true, false, true]);
  });

  test("evicts beyond memoryBytes and never keeps an answer larger than it", () => {
    const { cache } = cacheOnFakeTable({ memoryBytes: 10 });
    const [a, b, c, big] = ["a", "b", "c", "big"].map((name) => planFor(cache, name)) as [CachePlan, CachePlan, CachePlan, CachePlan];
    for (const plan of [a, b, c]) cache.store(plan, answer('"xx"'));
    assert.deepEqual(held(cache, [a, b, c]), [false, true, true]);
    cache.store(big, answer(`"${"x".repeat(10)}"`));
    assert.equal(cache.recall(big), null);
  });

  test("a sweep drops expired answers from memory and keeps the rest", async () => {
    const { cache, clock } = cacheOnFakeTable();
    const short = planFor(cache, "short");
    const long = planFor(cache, "long");
    cache.store({ ...short, ttlMs: 1_000 }, answer("{}"));
    cache.store({ ...long, ttlMs: 60_000 }, answer("{}"));
    clock.now += 1_000;
    await cache.sweep();
    clock.now -= 1_000;
    assert.deepEqual(held(cache, [short, long]), [false, true]);
  });
});
