/** The response cache's keys and its in-memory LRU: what splits or shares an entry, and what is evicted. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { directCacheKey, semanticParts } from "../../src/services/inference/cache-key.js";
import { LruMap } from "../../src/services/inference/lru-map.js";
import { ResponseCache } from "../../src/services/inference/response-cache.js";
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

describe("LRU map", () => {
  test("evicts the least recently used entry beyond its count", () => {
    const lru = new LruMap<string, number>(2, 100, () => 1);
    lru.set("a", 1);
    lru.set("b", 2);
    assert.equal(lru.get("a"), 1);
    lru.set("c", 3);
    assert.equal(lru.get("b"), undefined);
    assert.equal(lru.get("a"), 1);
    assert.equal(lru.get("c"), 3);
  });

  test("evicts beyond its total size and never keeps a value larger than it", () => {
    const lru = new LruMap<string, string>(10, 10, (value) => value.length);
    lru.set("a", "aaaa");
    lru.set("b", "bbbb");
    lru.set("c", "cccc");
    assert.equal(lru.get("a"), undefined);
    assert.equal(lru.count, 2);
    lru.set("big", "x".repeat(11));
    assert.equal(lru.get("big"), undefined);
  });

  test("keeps recency in order through reads, replacements and removals", () => {
    const lru = new LruMap<string, number>(3, 100, () => 1);
    lru.set("a", 1);
    lru.set("b", 2);
    lru.set("c", 3);
    assert.equal(lru.get("a"), 1);
    assert.equal(lru.get("c"), 3);
    lru.set("b", 20);
    lru.delete("a");
    lru.set("d", 4);
    lru.set("e", 5);
    // Newest first: e, d, b. c was the oldest when e came in.
    assert.equal(lru.get("c"), undefined);
    assert.equal(lru.count, 3);
    lru.set("f", 6);
    assert.equal(lru.get("b"), undefined);
    assert.deepEqual([lru.get("d"), lru.get("e"), lru.get("f")], [4, 5, 6]);
  });

  test("prunes the entries it is told to drop and keeps the order of the rest", () => {
    const lru = new LruMap<string, number>(3, 100, () => 1);
    for (const [key, value] of [["a", 1], ["b", 2], ["c", 3]] as const) lru.set(key, value);
    lru.prune((value) => value === 2);
    assert.equal(lru.count, 2);
    lru.set("d", 4);
    lru.set("e", 5);
    assert.equal(lru.get("a"), undefined);
    assert.deepEqual([lru.get("c"), lru.get("d"), lru.get("e")], [3, 4, 5]);
  });
});

/** A cache over a table that counts its reads and holds nothing, on a clock the test moves. */
function cacheOnFakeTable(): { cache: ResponseCache; reads: () => number; clock: { now: number } } {
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
  const cache = new ResponseCache({ table, logger: createLogger({ level: "silent" }), clock: () => clock.now, embedder: null, vectorSchema: null });
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
