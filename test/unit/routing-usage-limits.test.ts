import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { routeRequest, type RoutingRequest } from "../../src/routing/governance-router.js";
import { createKeyCatalog } from "../../src/routing/model-catalog.js";
import { RoutingError } from "../../src/routing/routing-error.js";
import type { ProviderConfig, VirtualKey } from "../../src/routing/types.js";
import { UsageLimits } from "../../src/routing/usage-limits.js";
import { seededRandom } from "../../src/routing/weighted-random.js";

const HOUR = 3_600_000;

function fakeClock(): { now: () => number; advance: (ms: number) => void } {
  let time = 1_000_000;
  return { now: () => time, advance: (ms) => (time += ms) };
}

const budgeted: ProviderConfig = {
  provider: "openai",
  allowedModels: ["gpt-4o"],
  keyIds: ["*"],
  weight: 10,
  budgets: [{ maxLimit: 1, resetDurationMs: HOUR }],
  rateLimit: null,
};
const limited: ProviderConfig = {
  provider: "azure",
  allowedModels: ["gpt-4o"],
  keyIds: ["*"],
  weight: 1,
  budgets: [],
  rateLimit: { tokenMaxLimit: 1000, tokenResetDurationMs: 60_000 },
};
const key: VirtualKey = { id: "vk-1", name: "team-a", value: "v", isActive: true, providerConfigs: [budgeted, limited], mcpConfigs: [], teamId: "", customerId: "", budget: null, rateLimit: null };
const catalog = createKeyCatalog(new Map(), {});

function route(limits: UsageLimits, request: Partial<RoutingRequest> = {}) {
  return routeRequest({ model: "gpt-4o", virtualKey: key, ...request }, { catalog, limits, random: seededRandom(1) });
}

describe("UsageLimits", () => {
  test("a config under budget is not exceeded", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", budgeted, { costUsd: 0.5, tokens: 10 });
    assert.equal(limits.exceeded("vk-1", budgeted), null);
  });
  test("spending the budget exceeds it", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", budgeted, { costUsd: 0.6, tokens: 10 });
    limits.record("vk-1", budgeted, { costUsd: 0.4, tokens: 10 });
    assert.equal(limits.exceeded("vk-1", budgeted), "budget");
  });
  test("the budget window reset restores the config", () => {
    const clock = fakeClock();
    const limits = new UsageLimits(clock.now);
    limits.record("vk-1", budgeted, { costUsd: 2, tokens: 0 });
    clock.advance(HOUR);
    assert.equal(limits.exceeded("vk-1", budgeted), null);
  });
  test("using the token allowance hits the rate limit", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", limited, { costUsd: 0, tokens: 1000 });
    assert.equal(limits.exceeded("vk-1", limited), "rate_limit");
  });
  test("the rate-limit window reset restores the config", () => {
    const clock = fakeClock();
    const limits = new UsageLimits(clock.now);
    limits.record("vk-1", limited, { costUsd: 0, tokens: 5000 });
    clock.advance(60_000);
    assert.equal(limits.exceeded("vk-1", limited), null);
  });
  test("counts per virtual key", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", budgeted, { costUsd: 5, tokens: 0 });
    assert.equal(limits.exceeded("vk-2", budgeted), null);
  });
  test("a window that passed several resets starts from zero on its aligned boundary", () => {
    const clock = fakeClock();
    const limits = new UsageLimits(clock.now);
    limits.record("vk-1", budgeted, { costUsd: 0.9, tokens: 0 });
    clock.advance(3.5 * HOUR);
    limits.record("vk-1", budgeted, { costUsd: 0.2, tokens: 0 });
    const [entry] = limits.snapshot().entries;
    assert.deepEqual(entry?.budgets[0], { windowStartMs: 1_000_000 + 3 * HOUR, used: 0.2 });
  });
  test("a snapshot restores the counters into a new tracker", () => {
    const clock = fakeClock();
    const first = new UsageLimits(clock.now);
    first.record("vk-1", budgeted, { costUsd: 1, tokens: 0 });
    const saved = JSON.parse(JSON.stringify(first.snapshot()));
    const second = new UsageLimits(clock.now);
    second.restore(saved);
    assert.equal(second.exceeded("vk-1", budgeted), "budget");
    assert.equal(second.revision, first.revision);
  });
  test("a snapshot is a copy that later requests do not change", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", budgeted, { costUsd: 0.1, tokens: 0 });
    const saved = limits.snapshot();
    limits.record("vk-1", budgeted, { costUsd: 0.1, tokens: 0 });
    assert.equal(saved.entries[0]?.budgets[0]?.used, 0.1);
  });
  test("forget drops a virtual key's counters", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", budgeted, { costUsd: 5, tokens: 0 });
    limits.forget("vk-1");
    assert.equal(limits.exceeded("vk-1", budgeted), null);
  });
});

describe("UsageLimits reservations", () => {
  test("caps a reservation at what remains of the budget and refuses once nothing remains", () => {
    const limits = new UsageLimits(fakeClock().now);
    const first = limits.reserve("vk-1", budgeted, { costUsd: 0.75, tokens: 0 });
    const second = limits.reserve("vk-1", budgeted, { costUsd: 0.75, tokens: 0 });
    assert.ok(typeof first !== "string" && typeof second !== "string");
    assert.deepEqual(second.entries, [{ slot: 0, start: 1_000_000, amount: 0.25, partial: true }]);
    assert.equal(limits.reserve("vk-1", budgeted, { costUsd: 0.75, tokens: 0 }), "budget");
  });
  test("requests reserving in a window nobody has spent in yet see each other's reservations", () => {
    const clock = fakeClock();
    const limits = new UsageLimits(clock.now);
    assert.notEqual(typeof limits.reserve("vk-1", limited, { costUsd: 0, tokens: 4000 }), "string");
    clock.advance(5);
    assert.equal(limits.reserve("vk-1", limited, { costUsd: 0, tokens: 4000 }), "rate_limit");
  });
  test("a config fully reserved by requests in flight is exceeded for routing", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.reserve("vk-1", budgeted, { costUsd: 2, tokens: 0 });
    assert.equal(limits.exceeded("vk-1", budgeted), "budget");
  });
  test("releasing a reservation gives its room back; the spend recorded stays", () => {
    const limits = new UsageLimits(fakeClock().now);
    const hold = limits.reserve("vk-1", budgeted, { costUsd: 2, tokens: 0 });
    assert.ok(typeof hold !== "string");
    limits.record("vk-1", budgeted, { costUsd: 0.1, tokens: 0 });
    limits.release(hold);
    limits.release(hold);
    assert.equal(limits.exceeded("vk-1", budgeted), null);
    const next = limits.reserve("vk-1", budgeted, { costUsd: 2, tokens: 0 });
    assert.ok(typeof next !== "string");
    assert.equal(next.entries[0]?.amount, 0.9);
  });
  test("a reservation of a window that has ended holds nothing in the next one", () => {
    const clock = fakeClock();
    const limits = new UsageLimits(clock.now);
    limits.reserve("vk-1", budgeted, { costUsd: 2, tokens: 0 });
    clock.advance(HOUR);
    assert.equal(limits.exceeded("vk-1", budgeted), null);
  });
  test("admits one request with less room than its worst case at a time", () => {
    const limits = new UsageLimits(fakeClock().now);
    const first = limits.reserve("vk-1", budgeted, { costUsd: 0.6, tokens: 0 });
    const second = limits.reserve("vk-1", budgeted, { costUsd: 0.6, tokens: 0 });
    assert.ok(typeof first !== "string" && typeof second !== "string");
    // The first spent less than it reserved: the room it gives back takes only a request that fits in it.
    limits.record("vk-1", budgeted, { costUsd: 0.5, tokens: 0 });
    limits.release(first);
    assert.equal(limits.reserve("vk-1", budgeted, { costUsd: 0.6, tokens: 0 }), "budget");
    assert.notEqual(typeof limits.reserve("vk-1", budgeted, { costUsd: 0.05, tokens: 0 }), "string");
  });
  test("admits the next request with less room than its worst case once the last one is released", () => {
    const limits = new UsageLimits(fakeClock().now);
    const first = limits.reserve("vk-1", budgeted, { costUsd: 0.5, tokens: 0 });
    const second = limits.reserve("vk-1", budgeted, { costUsd: 0.75, tokens: 0 });
    assert.ok(typeof first !== "string" && typeof second !== "string");
    limits.record("vk-1", budgeted, { costUsd: 0.25, tokens: 0 });
    limits.release(second);
    const third = limits.reserve("vk-1", budgeted, { costUsd: 0.75, tokens: 0 });
    assert.ok(typeof third !== "string");
    assert.deepEqual(third.entries, [{ slot: 0, start: 1_000_000, amount: 0.25, partial: true }]);
  });
  test("reservations are never part of a snapshot", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.reserve("vk-1", budgeted, { costUsd: 2, tokens: 0 });
    const restored = new UsageLimits(fakeClock().now);
    restored.restore(limits.snapshot());
    assert.equal(restored.exceeded("vk-1", budgeted), null);
  });
});

describe("limits in governance routing", () => {
  test("budget exhaustion excludes the provider and the window reset restores it", () => {
    const clock = fakeClock();
    const limits = new UsageLimits(clock.now);
    assert.equal(route(limits).primary.provider, "openai");
    limits.record("vk-1", budgeted, { costUsd: 1, tokens: 0 });
    const over = route(limits);
    assert.equal(over.primary.provider, "azure");
    assert.deepEqual(over.fallbacks, []);
    clock.advance(HOUR);
    assert.equal(route(limits).primary.provider, "openai");
  });
  test("rate-limit exhaustion excludes the provider and the window reset restores it", () => {
    const clock = fakeClock();
    const limits = new UsageLimits(clock.now);
    limits.record("vk-1", limited, { costUsd: 0, tokens: 1000 });
    assert.deepEqual(route(limits).fallbacks, []);
    clock.advance(60_000);
    assert.deepEqual(route(limits).fallbacks, [{ provider: "azure", model: "gpt-4o" }]);
  });
  test("refuses with 402 when every eligible provider is over budget", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", budgeted, { costUsd: 1, tokens: 0 });
    assert.throws(
      () => route(limits, { model: "openai/gpt-4o" }),
      (error: unknown) => error instanceof RoutingError && error.type === "policy_budget_exceeded" && error.httpStatus === 402,
    );
  });
  test("refuses with 429 when the remaining providers are rate limited", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", budgeted, { costUsd: 1, tokens: 0 });
    limits.record("vk-1", limited, { costUsd: 0, tokens: 1000 });
    assert.throws(
      () => route(limits),
      (error: unknown) => error instanceof RoutingError && error.type === "policy_rate_limited" && error.httpStatus === 429,
    );
  });
  test("moves traffic to the next provider while requests in flight hold all of a config's budget", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.reserve("vk-1", budgeted, { costUsd: 1, tokens: 0 });
    assert.equal(route(limits).primary.provider, "azure");
  });
  test("drops a request fallback to a provider over its limit", () => {
    const limits = new UsageLimits(fakeClock().now);
    limits.record("vk-1", limited, { costUsd: 0, tokens: 1000 });
    assert.deepEqual(route(limits, { model: "openai/gpt-4o", fallbacks: ["azure/gpt-4o"] }).fallbacks, []);
  });
});
