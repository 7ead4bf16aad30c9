import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { balanceDirections, EXPLORATION_SHARE, type DirectionInput, type DirectionToggles } from "../../src/routing/adaptive-directions.js";
import { RouteHealth } from "../../src/routing/route-health.js";
import { seededRandom } from "../../src/routing/weighted-random.js";

const OFF: DirectionToggles = { directionSelectionEnabled: true, appendFallbacksToPinned: false, rerouteFailedDirections: false, pruneFailedFallbacks: false };

function fakeClock(): { now: () => number; advance: (ms: number) => void } {
  let at = 1_700_000_000_000;
  return { now: () => at, advance: (ms) => (at += ms) };
}

function input(health: RouteHealth, overrides: Partial<DirectionInput> = {}): DirectionInput {
  return {
    primary: { provider: "a", model: "m" },
    fallbacks: [],
    pinned: false,
    candidates: () => ["a", "b", "c"],
    allowed: () => true,
    health,
    toggles: OFF,
    random: seededRandom(5),
    ...overrides,
  };
}

/** Makes provider `name` recovering: failed by a 429, then past its cool-down (weight share 0.25). */
function recovering(health: RouteHealth, clock: ReturnType<typeof fakeClock>, name: string): void {
  health.recordFailure(name, "k", true);
  clock.advance(15_000);
  health.refresh();
}

describe("balanceDirections", () => {
  test("10,000 unpinned requests split by health share plus exploration within 2%", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    recovering(health, clock, "c");
    const shares = { a: 1, b: 1, c: health.providerFactor("c") };
    assert.equal(shares.c, 0.25);
    const total = shares.a + shares.b + shares.c;
    const counts = new Map<string, number>();
    const random = seededRandom(9);
    const runs = 10_000;
    for (let i = 0; i < runs; i++) {
      const { primary } = balanceDirections(input(health, { random }));
      counts.set(primary.provider, (counts.get(primary.provider) ?? 0) + 1);
    }
    for (const [name, share] of Object.entries(shares)) {
      const expected = (1 - EXPLORATION_SHARE) * (share / total) + EXPLORATION_SHARE / 3;
      const actual = (counts.get(name) ?? 0) / runs;
      assert.ok(Math.abs(actual - expected) < 0.02, `${name}: ${actual} vs ${expected}`);
    }
  });

  test("an unpinned request never draws a failed provider while another serves", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    health.recordFailure("a", "k", true);
    const random = seededRandom(2);
    for (let i = 0; i < 500; i++) assert.notEqual(balanceDirections(input(health, { random })).primary.provider, "a");
  });

  test("an unpinned request gets the other healthy providers as fallbacks, healthiest first", () => {
    const clock = fakeClock();
    const health = new RouteHealth({ clock: clock.now });
    recovering(health, clock, "b");
    const result = balanceDirections(input(health, { random: () => 0.1 }));
    const order = [result.primary.provider, ...result.fallbacks.map((t) => t.provider)];
    assert.deepEqual([...order].sort(), ["a", "b", "c"]);
    assert.equal(order.at(-1), "b");
  });

  test("direction_selection_enabled off leaves an unpinned request unchanged", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    health.recordFailure("a", "k", true);
    const result = balanceDirections(input(health, { toggles: { ...OFF, directionSelectionEnabled: false } }));
    assert.equal(result.changed, false);
    assert.equal(result.primary.provider, "a");
  });

  test("a pinned request passes unchanged with every pinned toggle off", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    health.recordFailure("a", "k", true);
    health.recordFailure("b", "k", true);
    const result = balanceDirections(input(health, { pinned: true, fallbacks: [{ provider: "b", model: "m" }] }));
    assert.equal(result.changed, false);
  });

  test("appended fallbacks stay within the providers the caller may use", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    const result = balanceDirections(input(health, { pinned: true, allowed: (p) => p !== "c", toggles: { ...OFF, appendFallbacksToPinned: true } }));
    assert.deepEqual(result.fallbacks.map((t) => t.provider), ["b"]);
  });

  test("re-routing keeps a failed pinned provider when nothing is healthier", () => {
    const health = new RouteHealth({ clock: fakeClock().now });
    for (const name of ["a", "b", "c"]) health.recordFailure(name, "k", true);
    const result = balanceDirections(input(health, { pinned: true, toggles: { ...OFF, rerouteFailedDirections: true } }));
    assert.equal(result.primary.provider, "a");
  });
});
