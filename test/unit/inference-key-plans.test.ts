/** Per-virtual-key plans: one per key, rebuilt when the key or the teams and customers change. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KEYLESS_PLAN, KeyPlans } from "../../src/inference/key-plans.js";
import { Hierarchy, type LevelOwner } from "../../src/routing/hierarchy.js";
import type { VirtualKey } from "../../src/routing/types.js";

function key(teamId: string): VirtualKey {
  return { id: "vk-1", name: "one", value: "sk-gw-1", isActive: true, providerConfigs: [], mcpConfigs: null, teamId, customerId: "", budget: null, rateLimit: null };
}

function owner(level: LevelOwner["level"], id: string, parentId = ""): LevelOwner {
  return { level, id, name: id, parentId, budget: null, rateLimit: null };
}

test("gives every request of one key the same plan", () => {
  const hierarchy = new Hierarchy();
  hierarchy.put(owner("customer", "cu-1"));
  hierarchy.put(owner("team", "team-1", "cu-1"));
  const plans = new KeyPlans(hierarchy);
  const vk = key("team-1");
  const first = plans.of(vk);
  assert.equal(plans.of(vk), first);
  assert.deepEqual(first.subject, { virtualKeyId: "vk-1", teamId: "team-1", customerId: "cu-1" });
});

test("rebuilds a key's plan when its team moves to another customer", () => {
  const hierarchy = new Hierarchy();
  hierarchy.put(owner("customer", "cu-1"));
  hierarchy.put(owner("customer", "cu-2"));
  hierarchy.put(owner("team", "team-1", "cu-1"));
  const plans = new KeyPlans(hierarchy);
  const vk = key("team-1");
  assert.equal(plans.of(vk).customer?.id, "cu-1");
  hierarchy.put(owner("team", "team-1", "cu-2"));
  assert.equal(plans.of(vk).customer?.id, "cu-2");
});

test("plans a replaced key anew", () => {
  const hierarchy = new Hierarchy();
  hierarchy.put(owner("team", "team-1"));
  const plans = new KeyPlans(hierarchy);
  assert.equal(plans.of(key("")).team, null);
  assert.equal(plans.of(key("team-1")).team?.id, "team-1");
});

test("plans a request without a key as keyless", () => {
  assert.equal(new KeyPlans(new Hierarchy()).of(null), KEYLESS_PLAN);
});
