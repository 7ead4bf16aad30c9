import assert from "node:assert/strict";
import { test } from "node:test";
import type { RoutingDecision } from "../../src/routing/governance-router.js";
import type { VirtualKey } from "../../src/routing/types.js";
import { RoutingLogRecords } from "../../src/inference/rule-variables.js";
import { RoutingLog, type RoutingLogEntry } from "../../src/telemetry/routing-log.js";

function described(model: string): Omit<RoutingLogEntry, "time"> {
  return { engines: ["governance"], requestedModel: model, provider: "openai", model, routingRuleId: "", routingRuleName: "", fallbacks: [], virtualKeyId: "", message: `chose ${model}` };
}

function decision(model: string, extra: Partial<RoutingDecision> = {}): RoutingDecision {
  return { primary: { provider: "openai", model }, fallbacks: [], enginesUsed: ["governance"], rule: null, pinnedKeyId: "", ...extra };
}

const KEY = { id: "vk-1", name: "one" } as VirtualKey;

test("builds a recorded decision's entry on its first read, with the time it was recorded", () => {
  const log = new RoutingLog(4);
  let built = 0;
  log.add(Date.UTC(2026, 10, 26, 12), { describe: () => (built++, described("gpt-4o")) });
  assert.equal(built, 0);
  const [first] = log.recent();
  assert.equal(first?.time, "2026-11-26T12:00:00.000Z");
  assert.equal(first?.model, "gpt-4o");
  log.recent();
  assert.equal(built, 1);
});

test("keeps the newest decisions first and drops the oldest past its size", () => {
  const log = new RoutingLog(2);
  for (const model of ["a", "b", "c"]) log.add(0, { describe: () => described(model) });
  assert.deepEqual(log.recent().map((entry) => entry.model), ["c", "b"]);
});

test("gives each entry of a shared record the time of its own decision", () => {
  const log = new RoutingLog(4);
  const record = { describe: () => described("gpt-4o") };
  log.add(Date.UTC(2026, 10, 26, 12), record);
  log.add(Date.UTC(2026, 10, 26, 13), record);
  assert.deepEqual(log.recent().map((entry) => entry.time), ["2026-11-26T13:00:00.000Z", "2026-11-26T12:00:00.000Z"]);
});

test("shares one record between requests of a key that named the same model and were routed alike", () => {
  const records = new RoutingLogRecords();
  const first = records.recordOf("gpt-4o", decision("gpt-4o"), KEY);
  assert.equal(records.recordOf("gpt-4o", decision("gpt-4o"), KEY), first);
  assert.equal(first.describe().virtualKeyId, "vk-1");
});

test("records a new decision when the target, fallbacks, engines, rule or key differ", () => {
  const records = new RoutingLogRecords();
  const variants: [string, RoutingDecision, VirtualKey | null][] = [
    ["another target", decision("gpt-4o", { primary: { provider: "azure", model: "gpt-4o" } }), KEY],
    ["a fallback", decision("gpt-4o", { fallbacks: [{ provider: "anthropic", model: "claude-sonnet-4" }] }), KEY],
    ["another engine", decision("gpt-4o", { enginesUsed: ["routing-rule", "governance"] }), KEY],
    ["a rule", decision("gpt-4o", { rule: { id: "rr-1", name: "pin" } }), KEY],
    ["no key", decision("gpt-4o"), null],
  ];
  for (const [why, changed, key] of variants) {
    const kept = records.recordOf("gpt-4o", decision("gpt-4o"), KEY);
    const record = records.recordOf("gpt-4o", changed, key);
    assert.notEqual(record, kept, why);
    assert.notDeepEqual(record.describe(), kept.describe(), why);
  }
});

test("describes a catalog resolution only with the options it had", () => {
  const records = new RoutingLogRecords();
  const catalog = (selected: string) => ({ model: "llama-3", selected, options: [{ provider: "groq", rule: "direct" as const, model: "llama-3" }, { provider: "together", rule: "direct" as const, model: "llama-3" }] });
  const a = records.recordOf("llama-3", decision("llama-3", { primary: { provider: "groq", model: "llama-3" }, catalog: catalog("groq") }), null);
  assert.equal(records.recordOf("llama-3", decision("llama-3", { primary: { provider: "groq", model: "llama-3" }, catalog: catalog("groq") }), null), a);
  const b = records.recordOf("llama-3", decision("llama-3", { primary: { provider: "groq", model: "llama-3" }, catalog: catalog("together") }), null);
  assert.notEqual(b, a);
  assert.match(b.describe().message, /selected provider "together"; load balancing chose "groq"/);
});
