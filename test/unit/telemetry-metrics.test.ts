/** The metric registry: names, types and label sets of the spec's tables, deferred recording, custom labels, the cap. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { register as globalRegistry } from "prom-client";
import { Metrics, type BaseLabels } from "../../src/telemetry/metrics.js";
import { parseExposition, total, types } from "../helpers/exposition.js";

const BASE = [
  "provider", "model", "alias", "method", "virtual_key_id", "virtual_key_name", "routing_engine_used",
  "routing_rule_id", "routing_rule_name", "complexity_tier", "complexity_mechanism", "selected_key_id",
  "selected_key_name", "fallback_index", "team_id", "team_name", "customer_id", "customer_name",
];
const GOVERNANCE = ["virtual_key_id", "virtual_key_name", "team_id", "team_name", "customer_id", "customer_name", "business_unit_id", "business_unit_name"];
const HTTP = ["path", "method", "status"];

/** name -> [type, label names without custom labels]. */
const TABLE: Record<string, [string, string[]]> = {
  http_requests_total: ["counter", HTTP],
  http_request_duration_seconds: ["histogram", HTTP],
  http_request_size_bytes: ["histogram", HTTP],
  http_response_size_bytes: ["histogram", HTTP],
  gw_upstream_requests_total: ["counter", BASE],
  gw_success_requests_total: ["counter", BASE],
  gw_error_requests_total: ["counter", [...BASE, "status_code", "error_type"]],
  gw_upstream_latency_seconds: ["histogram", [...BASE, "is_success"]],
  gw_overhead_latency_microseconds: ["histogram", BASE],
  gw_input_tokens_total: ["counter", BASE],
  gw_output_tokens_total: ["counter", BASE],
  gw_cost_total: ["counter", BASE],
  gw_routing_embedding_requests_total: ["counter", ["provider", "model", "phase"]],
  gw_routing_embedding_cost_total: ["counter", ["provider", "model", "phase"]],
  gw_cache_hits_total: ["counter", [...BASE, "cache_type"]],
  gw_active_requests: ["gauge", ["method"]],
  gw_provider_key_up: ["gauge", ["provider", "key_id", "key_name"]],
  gw_route_state: ["gauge", ["provider", "key_id", "key_name", "state"]],
  gw_key_rotation_events_total: ["counter", ["provider", "requested_model", "key_id", "key_name", "fail_reason"]],
  gw_request_retries: ["histogram", BASE],
  gw_stream_first_token_latency_seconds: ["histogram", BASE],
  gw_stream_inter_token_latency_seconds: ["histogram", BASE],
  gw_mcp_client_operation_duration_seconds: ["histogram", ["mcp_client", "mcp_tool_name", "mcp_method", "error_type", ...GOVERNANCE]],
  gw_mcp_tool_definition_changes_total: ["counter", ["mcp_client"]],
};

const BASE_VALUES: BaseLabels = { provider: "openai", model: "gpt-4o-mini", method: "chat" };

/** prom-client keeps a metric's label names on the instance; the typings do not show them. */
function labelNames(m: Metrics, name: string): string[] {
  const metric = m.registry.getSingleMetric(name) as unknown as { labelNames: string[] } | undefined;
  assert.ok(metric, `${name} is registered`);
  return metric.labelNames;
}

/** Records one sample into every metric family. */
function recordEverything(m: Metrics): void {
  m.recordHttpRequest({ path: "/health", method: "GET", status: 200, durationS: 0.001, reqBytes: 0, resBytes: 15 });
  m.recordUpstreamRequest(BASE_VALUES);
  m.recordSuccess(BASE_VALUES);
  m.recordError(BASE_VALUES, 429, "policy_rate_limited");
  m.recordUpstreamLatency(BASE_VALUES, 0.2, true);
  m.recordOverhead(BASE_VALUES, 120);
  m.recordTokens(BASE_VALUES, 10, 5);
  m.recordCost(BASE_VALUES, 0.0001);
  m.recordCacheHit(BASE_VALUES, "direct");
  m.recordRetries(BASE_VALUES, 1);
  m.recordFirstToken(BASE_VALUES, 0.1);
  m.recordInterTokens(BASE_VALUES, 0.01, 1);
  m.recordKeyRotation({ provider: "openai", requestedModel: "gpt-4o-mini", keyId: "k1", keyName: "main", failReason: "rate_limited" });
  m.activeRequestStarted("chat");
  m.setProviderKeyUp("openai", "k1", "main", true);
  m.watchRouteStates(() => [{ provider: "openai", keyId: "k1", keyName: "main", state: "degraded" }]);
  m.recordMcpToolCall({ mcpClient: "docs", toolName: "search", durationS: 0.05, errorType: "" });
  m.recordMcpToolDefinitionChange("docs");
  m.recordRoutingEmbedding("openai", "text-embedding-3-small", "warmup", 0.00001);
}

test("every metric of the spec's tables is registered with its type and label set", () => {
  const m = new Metrics();
  for (const [name, [, labels]] of Object.entries(TABLE)) assert.deepEqual(labelNames(m, name), labels, name);
});

test("the metrics have the spec's types", async () => {
  const m = new Metrics();
  const text = (await m.exposition()).body;
  const seen = types(text);
  for (const [name, [type]] of Object.entries(TABLE)) assert.equal(seen.get(name), type, name);
  assert.equal(seen.size, Object.keys(TABLE).length);
});

test("the metrics live in their own registry, not prom-client's global one", () => {
  const m = new Metrics();
  assert.notEqual(m.registry, globalRegistry);
  assert.equal(globalRegistry.getSingleMetric("http_requests_total"), undefined);
});

test("custom labels are appended to every metric", () => {
  const m = new Metrics({ customLabels: ["team", "env"] });
  for (const [name, [, labels]] of Object.entries(TABLE)) assert.deepEqual(labelNames(m, name), [...labels, "team", "env"], name);
});

test("user labels join the base label set only when enabled", () => {
  assert.ok(!labelNames(new Metrics(), "gw_success_requests_total").includes("user_id"));
  const on = new Metrics({ userLabelsEnabled: true });
  assert.deepEqual(labelNames(on, "gw_success_requests_total"), [...BASE, "user_id", "user_name"]);
  assert.ok(!labelNames(on, "http_requests_total").includes("user_id"));
});

test("gw_request_retries has the buckets 0,1,2,3,5,10", async () => {
  const m = new Metrics();
  m.recordRetries(BASE_VALUES, 2);
  const samples = parseExposition((await m.exposition()).body).filter((s) => s.name === "gw_request_retries_bucket");
  assert.deepEqual(samples.map((s) => s.labels["le"]), ["0", "1", "2", "3", "5", "10", "+Inf"]);
});

test("events that arrived together count as inter-token gaps of zero after the first", async () => {
  const m = new Metrics();
  m.recordInterTokens(BASE_VALUES, 0.02, 3);
  const samples = parseExposition((await m.exposition()).body);
  assert.equal(total(samples, "gw_stream_inter_token_latency_seconds_count"), 3);
  assert.equal(total(samples, "gw_stream_inter_token_latency_seconds_sum"), 0.02);
  const lowest = samples.find((s) => s.name === "gw_stream_inter_token_latency_seconds_bucket");
  assert.equal(lowest?.value, 2);
});

test("recording does no metric work until the queue is flushed", async () => {
  const m = new Metrics();
  m.recordHttpRequest({ path: "/health", method: "GET", status: 200, durationS: 0.001, reqBytes: 0, resBytes: 15 });
  const before = await m.registry.metrics();
  assert.equal(total(parseExposition(before), "http_requests_total"), 0);
  m.flush();
  assert.equal(total(parseExposition(await m.registry.metrics()), "http_requests_total"), 1);
});

test("queued records are applied without a scrape", async () => {
  const m = new Metrics();
  m.recordSuccess(BASE_VALUES);
  await new Promise((r) => setImmediate(r));
  assert.equal(total(parseExposition(await m.registry.metrics()), "gw_success_requests_total"), 1);
});

test("every metric family gets a sample from its recording call", async () => {
  const m = new Metrics();
  recordEverything(m);
  const samples = parseExposition((await m.exposition()).body);
  for (const name of Object.keys(TABLE)) {
    assert.ok(samples.some((s) => s.name === name || s.name === `${name}_count`), `${name} has a sample`);
  }
});

test("base labels take the spec's empty values and fallback_index 0", async () => {
  const m = new Metrics();
  m.recordSuccess(BASE_VALUES);
  const [s] = parseExposition((await m.exposition()).body).filter((x) => x.name === "gw_success_requests_total");
  assert.ok(s);
  assert.equal(s.labels["fallback_index"], "0");
  assert.equal(s.labels["alias"], "");
  assert.equal(s.labels["team_id"], "");
});

test("a final error empties the selected key labels", async () => {
  const m = new Metrics();
  m.recordError({ ...BASE_VALUES, selectedKeyId: "k1", selectedKeyName: "main" }, 502, "provider_bad_gateway");
  const [s] = parseExposition((await m.exposition()).body).filter((x) => x.name === "gw_error_requests_total");
  assert.ok(s);
  assert.equal(s.labels["selected_key_id"], "");
  assert.equal(s.labels["error_type"], "provider_bad_gateway");
  assert.equal(s.labels["status_code"], "502");
});

test("changing the custom labels re-creates the metrics and restarts counters", async () => {
  const m = new Metrics({ customLabels: ["team"] });
  m.recordSuccess(BASE_VALUES, { team: "a" });
  const first = m.registry;
  assert.equal(total(parseExposition((await m.exposition()).body), "gw_success_requests_total", { team: "a" }), 1);
  m.setCustomLabels(["team", "env"]);
  assert.notEqual(m.registry, first);
  assert.equal(total(parseExposition((await m.exposition()).body), "gw_success_requests_total"), 0);
  m.recordSuccess(BASE_VALUES, { team: "b", env: "prod" });
  assert.equal(total(parseExposition((await m.exposition()).body), "gw_success_requests_total", { team: "b", env: "prod" }), 1);
});

test("an unchanged custom label list keeps the registry and its counts", () => {
  const m = new Metrics({ customLabels: ["team"] });
  const first = m.registry;
  m.setCustomLabels(["team"]);
  assert.equal(m.registry, first);
});

test("requests in flight carry over a custom label change", async () => {
  const m = new Metrics({ customLabels: ["team"] });
  m.activeRequestStarted("chat", { team: "a" });
  m.setCustomLabels([]);
  assert.equal(total(parseExposition((await m.exposition()).body), "gw_active_requests", { method: "chat" }), 1);
  m.activeRequestFinished("chat", { team: "a" });
  assert.equal(total(parseExposition((await m.exposition()).body), "gw_active_requests"), 0);
});

test("reserved custom label names are skipped instead of breaking the registry", () => {
  const m = new Metrics({ customLabels: ["path", "team"] });
  assert.deepEqual(m.customLabels, ["team"]);
});

test("label values beyond the cap are recorded as __overflow__", async () => {
  const m = new Metrics({ customLabels: ["team"], maxLabelValues: 2 });
  for (const team of ["a", "b", "c", "d"]) m.recordSuccess(BASE_VALUES, { team });
  const samples = parseExposition((await m.exposition()).body);
  assert.equal(total(samples, "gw_success_requests_total", { team: "__overflow__" }), 2);
  assert.equal(total(samples, "gw_success_requests_total", { team: "a" }), 1);
});

test("a full queue drops records and counts them instead of growing", () => {
  const m = new Metrics({ maxPending: 2 });
  for (let i = 0; i < 5; i++) m.recordSuccess(BASE_VALUES);
  assert.equal(m.dropped, 3);
  m.flush();
});

test("gw_route_state shows 1 for a route's current state and 0 for the others", async () => {
  const m = new Metrics();
  m.watchRouteStates(() => [{ provider: "openai", keyId: "k1", keyName: "main", state: "failed" }]);
  const states = parseExposition((await m.exposition()).body).filter((x) => x.name === "gw_route_state");
  assert.deepEqual(
    states.map((s) => [s.labels["state"], s.value]),
    [["healthy", 0], ["degraded", 0], ["failed", 1], ["recovering", 0]],
  );
});

/** A base label source with every field set, and each field's name as the label has it. */
const FULL_BASE: BaseLabels = {
  provider: "openai", model: "gpt-4o", method: "chat", alias: "fast", virtualKeyId: "vk-1", virtualKeyName: "one",
  routingEngineUsed: ["governance"], routingRuleId: "r-1", routingRuleName: "rule", complexityTier: "SIMPLE",
  complexityMechanism: "semantic", selectedKeyId: "k-1", selectedKeyName: "key", fallbackIndex: 0, teamId: "t-1",
  teamName: "team", customerId: "c-1", customerName: "customer", userId: "u-1", userName: "user",
};
const CHANGED: { [K in keyof BaseLabels]?: BaseLabels[K] } = {
  provider: "anthropic", model: "gpt-4o-mini", method: "responses", alias: "slow", virtualKeyId: "vk-2", virtualKeyName: "two",
  routingEngineUsed: ["governance", "core"], routingRuleId: "r-2", routingRuleName: "other", complexityTier: "COMPLEX",
  complexityMechanism: "llm", selectedKeyId: "k-2", selectedKeyName: "other key", fallbackIndex: 1, teamId: "t-2",
  teamName: "other team", customerId: "c-2", customerName: "other customer", userId: "u-2", userName: "other user",
};

test("requests whose base labels differ in any one field are counted in series of their own", async () => {
  for (const field of Object.keys(CHANGED) as (keyof BaseLabels)[]) {
    const m = new Metrics({ userLabelsEnabled: true });
    // Separate objects with equal values, as each request builds its own.
    m.recordSuccess({ ...FULL_BASE });
    m.recordSuccess({ ...FULL_BASE });
    m.recordSuccess({ ...FULL_BASE, [field]: CHANGED[field] });
    const series = parseExposition((await m.exposition()).body).filter((s) => s.name === "gw_success_requests_total");
    assert.deepEqual(series.map((s) => s.value).sort(), [1, 2], `a changed ${field} gets its own series`);
  }
});

test("requests alternating between more label sets than are remembered keep each count exact", async () => {
  const m = new Metrics();
  for (let round = 0; round < 3; round++) for (let key = 0; key < 12; key++) m.recordUpstreamLatency({ ...BASE_VALUES, selectedKeyId: `k-${key}` }, 0.1, key % 2 === 0);
  const samples = parseExposition((await m.exposition()).body).filter((s) => s.name === "gw_upstream_latency_seconds_count");
  assert.equal(samples.length, 12);
  for (const sample of samples) {
    assert.equal(sample.value, 3);
    assert.equal(sample.labels["is_success"], Number(sample.labels["selected_key_id"]?.slice(2)) % 2 === 0 ? "true" : "false");
  }
});

test("http requests are counted by path, method and status", async () => {
  const m = new Metrics();
  for (const status of [200, 200, 404]) m.recordHttpRequest({ path: "/v1/chat/completions", method: "POST", status, durationS: 0.001, reqBytes: 10, resBytes: 20 });
  m.recordHttpRequest({ path: "/health", method: "GET", status: 200, durationS: 0.001, reqBytes: 0, resBytes: 15 });
  const samples = parseExposition((await m.exposition()).body);
  assert.equal(total(samples, "http_requests_total", { path: "/v1/chat/completions", method: "POST", status: "200" }), 2);
  assert.equal(total(samples, "http_requests_total", { path: "/v1/chat/completions", method: "POST", status: "404" }), 1);
  assert.equal(total(samples, "http_requests_total", { path: "/health", method: "GET", status: "200" }), 1);
});

test("a provider key's up state follows its last outcome, and a renamed key gets its own series", async () => {
  const m = new Metrics();
  m.setProviderKeyUp("openai", "k-1", "first", true);
  m.setProviderKeyUp("openai", "k-1", "first", false);
  m.setProviderKeyUp("openai", "k-1", "first", false);
  m.setProviderKeyUp("openai", "k-1", "renamed", true);
  const samples = parseExposition((await m.exposition()).body).filter((s) => s.name === "gw_provider_key_up");
  assert.equal(total(samples, "gw_provider_key_up", { key_id: "k-1", key_name: "first" }), 0);
  assert.equal(total(samples, "gw_provider_key_up", { key_id: "k-1", key_name: "renamed" }), 1);
});

test("requests in flight are counted per method as they start and finish", async () => {
  const m = new Metrics();
  m.activeRequestStarted("chat");
  m.activeRequestStarted("chat");
  m.activeRequestStarted("embedding");
  m.activeRequestFinished("chat");
  const samples = parseExposition((await m.exposition()).body);
  assert.equal(total(samples, "gw_active_requests", { method: "chat" }), 1);
  assert.equal(total(samples, "gw_active_requests", { method: "embedding" }), 1);
});
