import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { orderKeys } from "../../src/routing/key-selection.js";
import { createKeyCatalog } from "../../src/routing/model-catalog.js";
import { RouteHealth, type RouteChange } from "../../src/routing/route-health.js";
import type { ProviderKey } from "../../src/routing/types.js";
import { seededRandom } from "../../src/routing/weighted-random.js";

/** A clock the test moves by hand. */
function fakeClock(): { now: () => number; advance: (ms: number) => void } {
  let at = 1_700_000_000_000;
  return { now: () => at, advance: (ms) => (at += ms) };
}

function key(id: string, weight = 1): ProviderKey {
  return { id, name: id, models: [], aliases: {}, weight };
}

const catalog = createKeyCatalog(new Map(), { openai: ["gpt-4o"] });

/** Feeds a key `rounds` of ten requests, the first `failuresPerTen` of each failing, recomputing after each round. */
function feed(health: RouteHealth, clock: ReturnType<typeof fakeClock>, keyId: string, failuresPerTen: number, rounds: number): void {
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < 10; i++) {
      if (i < failuresPerTen) health.recordFailure("openai", keyId, false);
      else health.recordSuccess("openai", keyId, 100, 10);
      clock.advance(100);
    }
    health.refresh();
  }
}

describe("RouteHealth", () => {
  test("a key failing 60% goes failed, then recovering after 15 s, then healthy after 5 successes", () => {
    const clock = fakeClock();
    const changes: RouteChange[] = [];
    const health = new RouteHealth({ clock: clock.now, onChange: (change) => changes.push(change) });
    feed(health, clock, "k1", 6, 3);
    assert.equal(health.keyState("openai", "k1"), "failed");
    assert.equal(health.keyFactor("openai", "k1"), 0);
    clock.advance(15_000);
    health.refresh();
    assert.equal(health.keyState("openai", "k1"), "recovering");
    for (let i = 0; i < 5; i++) health.recordSuccess("openai", "k1", 100, 10);
    assert.equal(health.keyState("openai", "k1"), "healthy");
    const keyChanges = changes.filter((change) => change.keyId === "k1").map((change) => change.to);
    assert.deepEqual(keyChanges, ["failed", "recovering", "healthy"]);
  });

  test("a failure while recovering fails the route again with a doubled cool-down", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    health.recordFailure("openai", "k1", true);
    clock.advance(15_000);
    health.refresh();
    assert.equal(health.keyState("openai", "k1"), "recovering");
    health.recordFailure("openai", "k1", false);
    assert.equal(health.keyState("openai", "k1"), "failed");
    clock.advance(15_000);
    health.refresh();
    assert.equal(health.keyState("openai", "k1"), "failed");
    clock.advance(15_000);
    health.refresh();
    assert.equal(health.keyState("openai", "k1"), "recovering");
  });

  test("a rate-limit hit opens the circuit at once", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    health.recordFailure("openai", "k1", true);
    assert.equal(health.keyState("openai", "k1"), "failed");
  });

  test("a key failing 3% is degraded and keeps a reduced weight", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    for (let i = 0; i < 100; i++) {
      if (i % 33 === 32) health.recordFailure("openai", "k1", false);
      else health.recordSuccess("openai", "k1", 100, 10);
      clock.advance(50);
    }
    health.refresh();
    assert.equal(health.keyState("openai", "k1"), "degraded");
    const factor = health.keyFactor("openai", "k1");
    assert.ok(factor > 0 && factor < 1, `factor ${factor}`);
  });

  test("a key much slower per token than its siblings is degraded and loses share", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    for (let i = 0; i < 30; i++) {
      health.recordSuccess("openai", "fast1", 100, 10);
      health.recordSuccess("openai", "fast2", 100, 10);
      health.recordSuccess("openai", "slow", 1_000, 10);
    }
    clock.advance(5_000);
    health.refresh();
    assert.equal(health.keyState("openai", "slow"), "degraded");
    assert.ok(health.keyFactor("openai", "slow") < health.keyFactor("openai", "fast1"));
  });

  test("a recovering route starts at its probe share and regains 90% of its penalty within 30 s", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    health.recordFailure("openai", "k1", true);
    clock.advance(15_000);
    health.refresh();
    assert.equal(health.keyFactor("openai", "k1"), 0.25);
    clock.advance(30_000);
    health.refresh();
    assert.equal(health.keyState("openai", "k1"), "recovering");
    const regained = (health.keyFactor("openai", "k1") - 0.25) / 0.75;
    assert.ok(regained >= 0.9, `regained ${regained}`);
  });

  test("weights are recomputed at most every 5 s", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    health.recordFailure("openai", "k1", true);
    clock.advance(15_000);
    health.refresh();
    clock.advance(4_000);
    health.refresh();
    assert.equal(health.keyFactor("openai", "k1"), 0.25);
    clock.advance(1_000);
    health.refresh();
    assert.ok(health.keyFactor("openai", "k1") > 0.25);
  });
});

describe("orderKeys with route health", () => {
  test("skips a circuit-broken key while another key can serve", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    health.recordFailure("openai", "bad", true);
    for (let seed = 0; seed < 50; seed++) {
      const ids = orderKeys({ provider: "openai", model: "gpt-4o", keys: [key("bad"), key("good")], config: null, catalog, random: seededRandom(seed), health }).map((c) => c.key.id);
      assert.deepEqual(ids, ["good"]);
    }
  });

  test("keeps a circuit-broken key when it is the only one", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    health.recordFailure("openai", "bad", true);
    const ids = orderKeys({ provider: "openai", model: "gpt-4o", keys: [key("bad")], config: null, catalog, random: seededRandom(1), health }).map((c) => c.key.id);
    assert.deepEqual(ids, ["bad"]);
  });

  test("a recovering key gets only its probe share of the traffic", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    health.recordFailure("openai", "probe", true);
    clock.advance(15_000);
    health.refresh();
    const random = seededRandom(7);
    let probes = 0;
    const runs = 10_000;
    for (let i = 0; i < runs; i++) {
      const [first] = orderKeys({ provider: "openai", model: "gpt-4o", keys: [key("probe"), key("steady")], config: null, catalog, random, health });
      if (first?.key.id === "probe") probes++;
    }
    // Weights 0.25 : 1 give the probe a fifth of the first picks.
    assert.ok(Math.abs(probes / runs - 0.2) < 0.02, `probe share ${probes / runs}`);
  });

  test("10,000 selections split the traffic as the health-scaled weights within 2%", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    for (let i = 0; i < 100; i++) {
      if (i % 33 === 32) health.recordFailure("openai", "b", false);
      else health.recordSuccess("openai", "b", 100, 10);
      health.recordSuccess("openai", "a", 100, 10);
      health.recordSuccess("openai", "c", 100, 10);
      clock.advance(50);
    }
    health.refresh();
    const keys = [key("a", 2), key("b", 1), key("c", 1)];
    const weights = keys.map((k) => k.weight * health.keyFactor("openai", k.id));
    const total = weights.reduce((sum, w) => sum + w, 0);
    const counts = new Map<string, number>();
    const random = seededRandom(11);
    const runs = 10_000;
    for (let i = 0; i < runs; i++) {
      const [first] = orderKeys({ provider: "openai", model: "gpt-4o", keys, config: null, catalog, random, health });
      counts.set(first?.key.id ?? "", (counts.get(first?.key.id ?? "") ?? 0) + 1);
    }
    assert.ok((weights[1] ?? 1) < 1, "b is penalised");
    for (const [index, k] of keys.entries()) {
      const expected = (weights[index] ?? 0) / total;
      const actual = (counts.get(k.id) ?? 0) / runs;
      assert.ok(Math.abs(actual - expected) < 0.02, `${k.id}: ${actual} vs ${expected}`);
    }
  });
});

describe("provider routes", () => {
  test("a provider much slower per token than the others is degraded and loses share", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    for (let i = 0; i < 30; i++) {
      health.recordSuccess("fast-a", "k", 100, 10);
      health.recordSuccess("fast-b", "k", 120, 10);
      health.recordSuccess("slow", "k", 2_000, 10);
    }
    clock.advance(5_000);
    health.refresh();
    assert.equal(health.providerState("slow"), "degraded");
    assert.equal(health.providerState("fast-a"), "healthy");
    assert.ok(health.providerFactor("slow") < 0.2, `factor ${health.providerFactor("slow")}`);
  });
});
