/**
 * Reservations against the hierarchy's limits: on one node, concurrent requests cannot all take the last
 * room of a budget; across nodes, a ledger over a shared backend leases slices and never grants more than
 * the limit between the nodes. The backend here is an in-memory stand-in with the database's arithmetic.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Hierarchy, type LevelExceeded, type LevelOwner } from "../../src/routing/hierarchy.js";
import { LimitGate, type ConfigExceeded, type LimitHold } from "../../src/routing/limit-gate.js";
import { parseWindow } from "../../src/routing/limit-window.js";
import { SharedLedger, type LedgerHold } from "../../src/routing/shared-ledger.js";
import type { ProviderConfig, VirtualKey } from "../../src/routing/types.js";
import { UsageLimits } from "../../src/routing/usage-limits.js";
import type { CounterBackend, LeaseGrant, LeaseRequest } from "../../src/store/index.js";

const NOW = Date.UTC(2026, 10, 26, 12);

function key(overrides: Partial<VirtualKey>): VirtualKey {
  return { id: "vk-a", name: "a", value: "sk-a", isActive: true, providerConfigs: [], mcpConfigs: null, teamId: "", customerId: "", budget: null, rateLimit: null, ...overrides };
}

const HOUR = parseWindow("1h", "test");

/** One counter store for every node, leasing as the shared_counter table does; counts its calls. */
class MemoryCounters implements CounterBackend {
  readonly rows = new Map<string, { start: number; end: number; used: number }>();
  leases = 0;

  async lease(r: LeaseRequest): Promise<LeaseGrant> {
    this.leases++;
    await new Promise((resolve) => setImmediate(resolve));
    const row = this.rows.get(r.key) ?? { start: r.start, end: r.end, used: 0 };
    const slice = (r.max - row.used) / (2 * r.nodes);
    const granted = Math.min(Math.max(r.want, r.integral ? Math.floor(slice) : slice), Math.max(r.max - row.used, 0));
    row.used += granted;
    this.rows.set(r.key, row);
    return { start: row.start, end: row.end, granted, used: row.used };
  }

  async adjust(k: string, start: number, amount: number): Promise<void> {
    const row = this.rows.get(k);
    if (row !== undefined && row.start === start) row.used = Math.max(0, row.used + amount);
  }
}

function isHold(result: LimitHold | LevelExceeded | ConfigExceeded): result is LimitHold {
  return "local" in result;
}

/** A gate's answer that must not have waited for a shared counter. */
function sync<T>(result: T | Promise<T>): T {
  assert.ok(!(result instanceof Promise), "the gate waited although no counter is shared");
  return result;
}

describe("reservations on one node", () => {
  test("caps a request's reservation at what remains of the budget and refuses the next one", () => {
    const hierarchy = new Hierarchy(() => NOW);
    const gate = new LimitGate(hierarchy, new UsageLimits(() => NOW));
    const vk = key({ budget: { maxLimit: 1, window: HOUR, calendarAligned: false } });
    const first = gate.reserve(vk, { costUsd: 0.75, tokens: 10 });
    const second = gate.reserve(vk, { costUsd: 0.75, tokens: 10 });
    assert.ok(!(first instanceof Promise) && isHold(first) && !(second instanceof Promise) && isHold(second));
    assert.equal(second.local.entries[0]?.amount, 0.25);
    const third = gate.reserve(vk, { costUsd: 0.75, tokens: 10 });
    assert.ok(!(third instanceof Promise) && !isHold(third));
    assert.equal(third.limit, "budget");
  });

  test("admits one request with less room than its worst case at a time", () => {
    const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
    const vk = key({ budget: { maxLimit: 1, window: HOUR, calendarAligned: false } });
    const first = sync(gate.reserve(vk, { costUsd: 0.6, tokens: 10 }));
    const second = sync(gate.reserve(vk, { costUsd: 0.6, tokens: 10 }));
    assert.ok(isHold(first) && isHold(second), "the budget refused a request while room remained");
    assert.equal(second.local.entries[0]?.partial, true);
    // The first spent less than it reserved: the room it gives back takes only a request that fits in it.
    gate.settle(first, 0.5, 10);
    const crowded = sync(gate.reserve(vk, { costUsd: 0.6, tokens: 10 }));
    assert.ok(!isHold(crowded) && "owner" in crowded);
    assert.equal(crowded.limit, "budget");
    assert.ok(isHold(sync(gate.reserve(vk, { costUsd: 0.05, tokens: 10 }))), "a request that fits in the room given back was refused");
  });

  test("refuses a crowded request without counting it against the request rate limit", () => {
    const hierarchy = new Hierarchy(() => NOW);
    const gate = new LimitGate(hierarchy, new UsageLimits(() => NOW));
    const vk = key({ budget: { maxLimit: 1, window: HOUR, calendarAligned: false }, rateLimit: { requests: { maxLimit: 100, window: HOUR }, tokens: null } });
    const first = sync(gate.reserve(vk, { costUsd: 0.6, tokens: 10 }));
    const second = sync(gate.reserve(vk, { costUsd: 0.6, tokens: 10 }));
    assert.ok(isHold(first) && isHold(second));
    gate.settle(first, 0.5, 10);
    assert.ok(!isHold(sync(gate.reserve(vk, { costUsd: 0.6, tokens: 10 }))));
    assert.equal(hierarchy.usage(vk)[0]?.requests?.used, 2);
  });

  test("admits the next request with less room than its worst case once the last one settled", () => {
    const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
    const vk = key({ budget: { maxLimit: 1, window: HOUR, calendarAligned: false } });
    const first = sync(gate.reserve(vk, { costUsd: 0.5, tokens: 10 }));
    const second = sync(gate.reserve(vk, { costUsd: 0.75, tokens: 10 }));
    assert.ok(isHold(first) && isHold(second));
    gate.settle(second, 0.25, 10);
    const third = sync(gate.reserve(vk, { costUsd: 0.75, tokens: 10 }));
    assert.ok(isHold(third));
    assert.equal(third.local.entries[0]?.amount, 0.25);
  });

  test("applies a team's new budget to a key whose levels were read before the change", () => {
    const hierarchy = new Hierarchy(() => NOW);
    const team = (maxLimit: number): LevelOwner => ({ level: "team", id: "team-a", name: "a", parentId: "", budget: { maxLimit, window: HOUR, calendarAligned: false }, rateLimit: null });
    hierarchy.put(team(1));
    const vk = key({ teamId: "team-a" });
    const gate = new LimitGate(hierarchy, new UsageLimits(() => NOW));
    const first = sync(gate.reserve(vk, { costUsd: 0.5, tokens: 10 }));
    assert.ok(isHold(first));
    gate.settle(first, 0.5, 10);
    hierarchy.put(team(0.5));
    const refused = sync(gate.reserve(vk, { costUsd: 0.1, tokens: 10 }));
    assert.ok(!isHold(refused) && "owner" in refused);
    assert.equal(refused.owner.id, "team-a");
  });

  test("gives back what a settled request reserved beyond its actual cost", () => {
    const hierarchy = new Hierarchy(() => NOW);
    const gate = new LimitGate(hierarchy, new UsageLimits(() => NOW));
    const vk = key({ budget: { maxLimit: 1, window: HOUR, calendarAligned: false } });
    const first = gate.reserve(vk, { costUsd: 1, tokens: 10 });
    assert.ok(!(first instanceof Promise) && isHold(first));
    gate.settle(first, 0.1, 10);
    const [usage] = hierarchy.usage(vk);
    assert.equal(usage?.budget?.used, 0.1);
    const next = gate.reserve(vk, { costUsd: 0.5, tokens: 10 });
    assert.ok(!(next instanceof Promise) && isHold(next));
    assert.equal(next.local.entries[0]?.amount, 0.5);
  });
});

describe("reservations on one node while the clock moves", () => {
  const config: ProviderConfig = { provider: "openai", allowedModels: ["*"], keyIds: ["*"], weight: 1, budgets: [{ maxLimit: 1, resetDurationMs: 3_600_000 }], rateLimit: null };

  /** A gate whose clock moves a millisecond at every read, as requests arriving one after another see it. */
  function movingGate(): LimitGate {
    let now = NOW;
    const clock = () => now++;
    return new LimitGate(new Hierarchy(clock), new UsageLimits(clock));
  }

  test("refuses the second of two requests whose worst case covers the key's budget before either settles", () => {
    const gate = movingGate();
    const vk = key({ budget: { maxLimit: 1, window: HOUR, calendarAligned: false } });
    assert.ok(isHold(sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }))));
    const second = sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }));
    assert.ok(!isHold(second) && "owner" in second);
    assert.equal(second.limit, "budget");
  });

  test("refuses the second of two requests whose worst case covers the key's token limit before either settles", () => {
    const gate = movingGate();
    const vk = key({ rateLimit: { requests: null, tokens: { maxLimit: 1000, window: HOUR } } });
    assert.ok(isHold(sync(gate.reserve(vk, { costUsd: 0, tokens: 4096 }))));
    const second = sync(gate.reserve(vk, { costUsd: 0, tokens: 4096 }));
    assert.ok(!isHold(second) && "owner" in second);
    assert.equal(second.limit, "tokens");
  });

  test("refuses the second of two requests whose worst case covers the routed provider config's budget, naming the config", () => {
    const gate = movingGate();
    const vk = key({ providerConfigs: [config] });
    assert.ok(isHold(sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }, config))));
    assert.deepEqual(sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }, config)), { config, limit: "budget" });
  });

  test("a refusal by the provider config undoes the request's count at the key", () => {
    const hierarchy = new Hierarchy(() => NOW);
    const gate = new LimitGate(hierarchy, new UsageLimits(() => NOW));
    const vk = key({ providerConfigs: [config], rateLimit: { requests: { maxLimit: 10, window: HOUR }, tokens: null } });
    assert.ok(isHold(sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }, config))));
    assert.deepEqual(sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }, config)), { config, limit: "budget" });
    assert.equal(hierarchy.usage(vk)[0]?.requests?.used, 1);
  });

  test("settling a request gives back the provider config's room it did not spend", () => {
    const limits = new UsageLimits(() => NOW);
    const gate = new LimitGate(new Hierarchy(() => NOW), limits);
    const vk = key({ providerConfigs: [config] });
    const hold = sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }, config));
    assert.ok(isHold(hold));
    limits.record(vk.id, config, { costUsd: 0.25, tokens: 10 });
    gate.settle(hold, 0.25, 10, { virtualKeyId: vk.id, config });
    const next = sync(gate.reserve(vk, { costUsd: 2, tokens: 10 }, config));
    assert.ok(isHold(next));
    assert.equal(next.localConfig?.entries[0]?.amount, 0.75);
  });
});

describe("reservations shared through a ledger", () => {
  const vk = key({ rateLimit: { requests: { maxLimit: 20, window: HOUR }, tokens: null } });

  async function admitted(gate: LimitGate): Promise<boolean> {
    const pending = gate.reserve(vk, { costUsd: 0, tokens: 1 });
    const result = pending instanceof Promise ? await pending : pending;
    return isHold(result);
  }

  test("three nodes spending at once admit exactly the request limit between them", async () => {
    const backend = new MemoryCounters();
    const gates = [0, 1, 2].map(() => {
      const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
      gate.share(new SharedLedger({ backend, liveNodes: () => 3, clock: () => NOW, warn: () => undefined }));
      return gate;
    });
    const results = await Promise.all(gates.flatMap((gate) => Array.from({ length: 20 }, () => admitted(gate))));
    assert.equal(results.filter(Boolean).length, 20);
  });

  test("a node spends a leased slice from memory without asking the backend for every request", async () => {
    const backend = new MemoryCounters();
    const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
    gate.share(new SharedLedger({ backend, liveNodes: () => 1, clock: () => NOW, warn: () => undefined }));
    for (let i = 0; i < 10; i++) assert.equal(await admitted(gate), true);
    assert.ok(backend.leases < 10, `leased ${backend.leases} times for 10 requests`);
  });

  test("returns the unspent slice at a graceful stop", async () => {
    const backend = new MemoryCounters();
    const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
    const ledger = new SharedLedger({ backend, liveNodes: () => 1, clock: () => NOW, warn: () => undefined });
    gate.share(ledger);
    assert.equal(await admitted(gate), true);
    assert.ok((backend.rows.get("virtual_key:vk-a:requests")?.used ?? 0) > 1);
    await ledger.returnSlices();
    assert.equal(backend.rows.get("virtual_key:vk-a:requests")?.used, 1);
  });

  test("serves on, with a warning, while the backend fails", async () => {
    const warnings: string[] = [];
    const broken: CounterBackend = { lease: () => Promise.reject(new Error("down")), adjust: () => Promise.reject(new Error("down")) };
    const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
    gate.share(new SharedLedger({ backend: broken, liveNodes: () => 1, clock: () => NOW, warn: (_err, message) => warnings.push(message) }));
    assert.equal(await admitted(gate), true);
    assert.equal(warnings.length, 1);
  });
});

describe("a shared budget's last room", () => {
  /** A request for `worst` of a $1 budget; the hold, or null when refused. */
  async function reserveBudget(ledger: SharedLedger, worst: number): Promise<LedgerHold | null> {
    const result = await ledger.reserve([{ key: "virtual_key:vk-a:budget", max: 1, window: HOUR, calendarAligned: false, amount: worst, whole: false, ref: "budget" }]);
    return "hold" in result ? result.hold : null;
  }

  test("admits one request with less room than its worst case at a time on a node", async () => {
    const ledger = new SharedLedger({ backend: new MemoryCounters(), liveNodes: () => 1, clock: () => NOW, warn: () => undefined });
    const first = await reserveBudget(ledger, 0.6);
    const second = await reserveBudget(ledger, 0.6);
    assert.ok(first !== null && second !== null, "the budget refused a request while room remained");
    assert.equal(second.entries[0]?.partial, true);
    // The first spent less than it reserved: what it gives back is room, but only for a request that fits in it.
    ledger.settle(first, () => 0.5);
    assert.equal(await reserveBudget(ledger, 0.6), null);
    assert.ok((await reserveBudget(ledger, 0.05)) !== null, "a request that fits in the room given back was refused");
  });

  test("admits the next request with less room than its worst case once the last one settled", async () => {
    const ledger = new SharedLedger({ backend: new MemoryCounters(), liveNodes: () => 1, clock: () => NOW, warn: () => undefined });
    const first = await reserveBudget(ledger, 0.5);
    const second = await reserveBudget(ledger, 0.6);
    assert.ok(first !== null && second !== null);
    ledger.settle(second, () => 0.2);
    ledger.settle(first, () => 0.5);
    const third = await reserveBudget(ledger, 0.6);
    assert.equal(third?.entries[0]?.amount, 0.3);
  });
});

describe("a provider config's limits shared through a ledger", () => {
  const config = (provider: string): ProviderConfig => ({
    provider,
    allowedModels: ["*"],
    keyIds: ["*"],
    weight: 1,
    budgets: [],
    rateLimit: { tokenMaxLimit: 100, tokenResetDurationMs: 3_600_000 },
  });
  const openai = config("openai");
  const anthropic = config("anthropic");
  const vk = key({ providerConfigs: [openai, anthropic] });

  test("three nodes spending at once never reserve more of the config's token limit than it holds", async () => {
    const backend = new MemoryCounters();
    const gates = [0, 1, 2].map(() => {
      const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
      gate.share(new SharedLedger({ backend, liveNodes: () => 3, clock: () => NOW, warn: () => undefined }));
      return gate;
    });
    const results = await Promise.all(gates.flatMap((gate) => Array.from({ length: 20 }, async () => await gate.reserve(vk, { costUsd: 0, tokens: 10 }, openai))));
    const holds = results.filter(isHold);
    const reserved = holds.reduce((sum, hold) => sum + (hold.shared?.entries.find((e) => e.key.endsWith("openai:tokens"))?.amount ?? 0), 0);
    assert.ok(reserved <= 100, `reserved ${reserved} tokens of 100`);
    assert.ok(holds.length >= 10);
    for (const refusal of results.filter((r) => !isHold(r))) assert.deepEqual(refusal, { config: openai, limit: "rate_limit" });
  });

  test("charges the config of the provider that answered, not the one reserved for", async () => {
    const backend = new MemoryCounters();
    const gate = new LimitGate(new Hierarchy(() => NOW), new UsageLimits(() => NOW));
    const ledger = new SharedLedger({ backend, liveNodes: () => 1, clock: () => NOW, warn: () => undefined });
    gate.share(ledger);
    assert.ok(isHold(await gate.reserve(vk, { costUsd: 0, tokens: 10 }, anthropic)));
    const hold = await gate.reserve(vk, { costUsd: 0, tokens: 10 }, openai);
    assert.ok(isHold(hold));
    gate.settle(hold, 0, 7, { virtualKeyId: vk.id, config: anthropic });
    await ledger.returnSlices();
    assert.equal(backend.rows.get("provider_config:vk-a:openai:tokens")?.used, 0);
    // The first hold never settled: its 10 tokens stay spent, plus the 7 the fallback answer cost.
    assert.equal(backend.rows.get("provider_config:vk-a:anthropic:tokens")?.used, 17);
  });
});
