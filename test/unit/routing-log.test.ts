import assert from "node:assert/strict";
import { test } from "node:test";
import { RoutingLog, type RoutingLogEntry } from "../../src/telemetry/routing-log.js";

function described(model: string): Omit<RoutingLogEntry, "time"> {
  return { engines: ["governance"], requestedModel: model, provider: "openai", model, routingRuleId: "", routingRuleName: "", fallbacks: [], virtualKeyId: "", message: `chose ${model}` };
}

test("builds a recorded decision's entry on its first read, with the time it was recorded", () => {
  const log = new RoutingLog(4);
  let built = 0;
  log.add({ at: Date.UTC(2026, 10, 26, 12), describe: () => (built++, described("gpt-4o")) });
  assert.equal(built, 0);
  const [first] = log.recent();
  assert.equal(first?.time, "2026-11-26T12:00:00.000Z");
  assert.equal(first?.model, "gpt-4o");
  log.recent();
  assert.equal(built, 1);
});

test("keeps the newest decisions first and drops the oldest past its size", () => {
  const log = new RoutingLog(2);
  for (const model of ["a", "b", "c"]) log.add({ at: 0, describe: () => described(model) });
  assert.deepEqual(log.recent().map((entry) => entry.model), ["c", "b"]);
});
