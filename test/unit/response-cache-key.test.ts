/** The response cache's keys and its in-memory LRU: what splits or shares an entry, and what is evicted. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { directCacheKey, semanticParts } from "../../src/services/inference/cache-key.js";
import { LruMap } from "../../src/services/inference/lru-map.js";

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
});
