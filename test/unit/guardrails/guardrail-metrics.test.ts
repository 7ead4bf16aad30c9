/**
 * The guardrail metric families in the exposition: no samples while no check ran, counters and histograms
 * by guardrail once one did, and the families carried into the fresh registry a change of the custom
 * labels makes.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import type { GuardrailDefinition } from "../../../src/guardrails/definition.js";
import { GuardrailTelemetry } from "../../../src/telemetry/guardrail-metrics.js";
import { createLogger } from "../../../src/telemetry/logger.js";
import { Metrics } from "../../../src/telemetry/metrics.js";
import { parseExposition, total, types } from "../../helpers/exposition.js";

const quiet = createLogger({ level: "silent", destination: new Writable({ write: (_chunk, _enc, done) => done() }) });

const HOOK: GuardrailDefinition = {
  id: "gr-hook",
  name: "hook",
  enabled: true,
  stages: new Set(["input"]),
  scope: "global",
  scopeId: "",
  condition: null,
  check: { type: "webhook", url: "http://127.0.0.1:9/check", headers: {}, timeoutMs: 2000 },
  content: null,
  action: "block",
  redaction: null,
  onError: "block",
  timeoutMs: 2000,
  samplingRate: 1,
};

describe("guardrail metrics", () => {
  test("expose their families and no sample while no check ran", async () => {
    const metrics = new Metrics();
    new GuardrailTelemetry(metrics, quiet);
    const { body } = await metrics.exposition();
    assert.equal(types(body).get("gw_guardrail_checks_total"), "counter");
    assert.equal(types(body).get("gw_guardrail_duration_seconds"), "histogram");
    assert.deepEqual(parseExposition(body).filter((sample) => sample.name.startsWith("gw_guardrail_")), []);
  });

  test("count a check by guardrail, stage and result, and observe its time by guardrail and type", async () => {
    const metrics = new Metrics();
    const telemetry = new GuardrailTelemetry(metrics, quiet);
    telemetry.checked(HOOK, "input", "pass", 0.02, undefined);
    telemetry.checked(HOOK, "input", "error", 2, undefined);
    telemetry.checked(HOOK, "output", "pass", null, undefined);
    const samples = parseExposition((await metrics.exposition()).body);
    assert.equal(total(samples, "gw_guardrail_checks_total", { guardrail: "hook", stage: "input", result: "pass" }), 1);
    assert.equal(total(samples, "gw_guardrail_checks_total", { guardrail: "hook", stage: "input", result: "error" }), 1);
    assert.equal(total(samples, "gw_guardrail_checks_total", { guardrail: "hook", stage: "output", result: "pass" }), 1);
    assert.equal(total(samples, "gw_guardrail_duration_seconds_count", { guardrail: "hook", type: "webhook" }), 2);
  });

  test("carry the request's custom label values, and start again in the registry new custom labels make", async () => {
    const metrics = new Metrics({ customLabels: ["team"] });
    const telemetry = new GuardrailTelemetry(metrics, quiet);
    telemetry.checked(HOOK, "input", "pass", 0.01, { team: "red" });
    let samples = parseExposition((await metrics.exposition()).body);
    assert.equal(total(samples, "gw_guardrail_checks_total", { guardrail: "hook", team: "red" }), 1);
    metrics.setCustomLabels(["team", "region"]);
    telemetry.checked(HOOK, "input", "pass", 0.01, { team: "blue", region: "eu" });
    samples = parseExposition((await metrics.exposition()).body);
    assert.equal(total(samples, "gw_guardrail_checks_total", { guardrail: "hook" }), 1);
    assert.equal(total(samples, "gw_guardrail_checks_total", { guardrail: "hook", team: "blue", region: "eu" }), 1);
  });
});
