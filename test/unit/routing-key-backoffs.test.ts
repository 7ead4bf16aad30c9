/** Provider key backoffs from retry-after: how the header is read, and how long a key waits. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { retryAfterMs } from "../../src/providers/provider-error.js";
import { KeyBackoffs } from "../../src/routing/key-backoffs.js";

const NOW = Date.UTC(2026, 10, 26, 12);

describe("retry-after", () => {
  test("reads delay seconds", () => {
    assert.equal(retryAfterMs("7", NOW), 7000);
  });

  test("reads an HTTP date as the time left until it", () => {
    assert.equal(retryAfterMs(new Date(NOW + 90_000).toUTCString(), NOW), 90_000);
  });

  test("answers null for a missing or unreadable header", () => {
    assert.equal(retryAfterMs(undefined, NOW), null);
    assert.equal(retryAfterMs("soon", NOW), null);
  });
});

describe("key backoffs", () => {
  test("a key waits until its time, then not", () => {
    let now = NOW;
    const backoffs = new KeyBackoffs(() => now);
    backoffs.backOff("openai", "k1", 5000);
    assert.equal(backoffs.waiting("openai", "k1"), true);
    assert.equal(backoffs.waiting("openai", "k2"), false);
    now += 5000;
    assert.equal(backoffs.waiting("openai", "k1"), false);
  });

  test("an earlier backoff learnt later does not shorten a longer one", () => {
    let now = NOW;
    const backoffs = new KeyBackoffs(() => now);
    backoffs.backOff("openai", "k1", 10_000);
    assert.equal(backoffs.apply({ provider: "openai", keyId: "k1", untilMs: NOW + 1000 }), false);
    now += 5000;
    assert.equal(backoffs.waiting("openai", "k1"), true);
  });

  test("tells the listener of backoffs learnt from an upstream", () => {
    const backoffs = new KeyBackoffs(() => NOW);
    const told: unknown[] = [];
    backoffs.onSet((backoff) => told.push(backoff));
    backoffs.backOff("openai", "k1", 1000);
    backoffs.apply({ provider: "openai", keyId: "k2", untilMs: NOW + 1000 });
    assert.deepEqual(told, [{ provider: "openai", keyId: "k1", untilMs: NOW + 1000 }]);
  });
});
