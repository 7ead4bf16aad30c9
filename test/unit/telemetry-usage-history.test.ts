/** The usage history's minute buckets: percentiles from the fixed histogram, buckets adding up, tallies capped to the busiest. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { LATENCY_BOUNDS_MS, MINUTE_MS, UsageHistory, addBucket, capTallies, emptyBucket, latencyQuantile } from "../../src/telemetry/usage-history.js";

test("a percentile falls inside the bucket holding its rank", () => {
  const h = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  // 90 calls of at most 50 ms, 10 of at most 1 s.
  h[LATENCY_BOUNDS_MS.indexOf(50)] = 90;
  h[LATENCY_BOUNDS_MS.indexOf(1_000)] = 10;
  const p50 = latencyQuantile(h, 0.5);
  assert.ok(p50 > 25 && p50 <= 50, String(p50));
  const p95 = latencyQuantile(h, 0.95);
  assert.ok(p95 > 500 && p95 <= 1_000, String(p95));
});

test("an empty histogram has no latency", () => {
  assert.equal(latencyQuantile(emptyBucket(0).latency, 0.95), 0);
});

test("counted calls land in their minute and add up across buckets", () => {
  let now = 10 * MINUTE_MS + 5;
  const history = new UsageHistory(() => now);
  history.request("k", "openai/m", false);
  history.latency(30);
  now += MINUTE_MS;
  history.request("k", "openai/m", true);
  history.usage("k", "openai/m", 10, 5, 0.5);
  const taken = history.takeDirty();
  assert.deepEqual(taken.map((b) => b.minute), [10 * MINUTE_MS, 11 * MINUTE_MS]);
  const sum = emptyBucket(0);
  for (const b of taken) addBucket(sum, b);
  assert.equal(sum.requests, 2);
  assert.equal(sum.errors, 1);
  assert.equal(sum.latency.reduce((a, b) => a + b, 0), 1);
  assert.deepEqual(sum.keys["k"], { requests: 2, tokens: 15, costUsd: 0.5 });
  assert.equal(history.takeDirty().length, 0);
});

test("an event after the changed buckets were handed out marks its minute changed again", () => {
  let now = 10 * MINUTE_MS + 5;
  const history = new UsageHistory(() => now);
  history.request("k", "openai/m", false);
  assert.deepEqual(history.takeDirty().map((b) => b.requests), [1]);
  now += 10;
  history.request("k", "openai/m", false);
  assert.deepEqual(history.takeDirty().map((b) => [b.minute, b.requests]), [[10 * MINUTE_MS, 2]]);
});

test("an event with a clock set back lands in its own earlier minute", () => {
  let now = 10 * MINUTE_MS + 5;
  const history = new UsageHistory(() => now);
  history.request("k", "openai/m", false);
  now -= MINUTE_MS;
  history.request("k", "openai/m", false);
  assert.deepEqual(history.takeDirty().map((b) => [b.minute, b.requests]), [[10 * MINUTE_MS, 1], [9 * MINUTE_MS, 1]]);
});

test("a tally map keeps only its busiest entries", () => {
  const map = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`t${i}`, { requests: i, tokens: 0, costUsd: 0 }]));
  const capped = capTallies(map, 50);
  assert.equal(Object.keys(capped).length, 50);
  assert.ok(!("t0" in capped) && "t59" in capped);
});
