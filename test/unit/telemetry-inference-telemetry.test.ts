/** The inference path's events as InferenceTelemetry turns them into samples and log lines. */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import { InferenceTelemetry } from "../../src/telemetry/inference-telemetry.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { Metrics, type BaseLabels } from "../../src/telemetry/metrics.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";

const LABELS: BaseLabels = { provider: "openai", model: "gpt-4o-mini", method: "chat", selectedKeyId: "k1", selectedKeyName: "main" };

function telemetry(): { observer: InferenceTelemetry; metrics: Metrics; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  const metrics = new Metrics();
  return { observer: new InferenceTelemetry(metrics, createLogger({ level: "debug", destination })), metrics, lines };
}

async function samples(metrics: Metrics): Promise<Sample[]> {
  return parseExposition((await metrics.exposition()).body);
}

test("a refusal counts one request and one error with no retries", async () => {
  const { observer, metrics } = telemetry();
  observer.refused(LABELS, new GatewayError("invalid_argument", "no", { type: "policy_model_not_allowed", httpStatus: 400 }));
  const s = await samples(metrics);
  assert.equal(total(s, "gw_upstream_requests_total"), 1);
  assert.equal(total(s, "gw_error_requests_total", { status_code: "400", error_type: "policy_model_not_allowed" }), 1);
  assert.equal(total(s, "gw_request_retries_sum"), 0);
  assert.equal(total(s, "gw_request_retries_count"), 1);
});

test("a final error names no selected key", async () => {
  const { observer, metrics } = telemetry();
  observer.final(LABELS, 1, new GatewayError("unavailable", "down", { type: "provider_unavailable", httpStatus: 502 }));
  const s = await samples(metrics);
  assert.equal(total(s, "gw_error_requests_total", { selected_key_id: "", selected_key_name: "", error_type: "provider_unavailable" }), 1);
  assert.equal(total(s, "gw_upstream_requests_total", { selected_key_id: "" }), 1);
});

test("an error type outside the vocabulary counts as gateway_internal", async () => {
  const { observer, metrics } = telemetry();
  observer.final(LABELS, 0, new GatewayError("internal", "boom"));
  assert.equal(total(await samples(metrics), "gw_error_requests_total", { status_code: "500", error_type: "gateway_internal" }), 1);
});

test("a served request counts a success with its selected key and retries", async () => {
  const { observer, metrics } = telemetry();
  observer.final(LABELS, 2, null);
  const s = await samples(metrics);
  assert.equal(total(s, "gw_success_requests_total", { selected_key_id: "k1" }), 1);
  assert.equal(total(s, "gw_request_retries_sum"), 2);
});

test("a failed attempt without an upstream status leaves the key's up state alone", async () => {
  const { observer, metrics } = telemetry();
  observer.attemptFailed(LABELS, 0.1, null);
  const s = await samples(metrics);
  assert.equal(s.filter((x) => x.name === "gw_provider_key_up").length, 0);
  assert.equal(total(s, "gw_upstream_latency_seconds_count", { is_success: "false" }), 1);
});

test("a failed attempt the provider answered marks its key down", async () => {
  const { observer, metrics } = telemetry();
  observer.attemptFailed(LABELS, 0.1, 429);
  assert.equal(total(await samples(metrics), "gw_provider_key_up", { provider: "openai", key_id: "k1", key_name: "main" }), 0);
  assert.equal((await samples(metrics)).filter((x) => x.name === "gw_provider_key_up").length, 1);
});

test("an unpriced model is reported once in the log, however many requests it serves", () => {
  const { observer, lines } = telemetry();
  for (let i = 0; i < 3; i++) observer.usage(LABELS, "gpt-4o-mini", 10, 5, null);
  assert.equal(lines.filter((l) => l.includes("no price known")).length, 1);
});

test("a tool call that failed inside the gateway is logged with its error", () => {
  const { observer, lines } = telemetry();
  observer.toolCall("docs-search", new Error("kaput"));
  observer.toolCall("docs-search", null);
  const logged = lines.filter((l) => l.includes("agent tool execution failed inside the gateway"));
  assert.equal(logged.length, 1);
  assert.match(logged[0] ?? "", /kaput/);
});
