/**
 * Inference metrics after a scripted mix through the real app and the official SDK: successes, streams,
 * a Responses call, policy refusals, a key rotation, a fallback, a final provider error and MCP tool calls.
 * The scraped counters and histogram counts equal what was sent, label by label. One top-level request is
 * one gw_upstream_requests_total sample, labelled by its last attempt (fallback_index, selected key).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";
import { fileKey, refusal, sdk } from "../helpers/inference.js";

let openai: MockUpstream;
let anthropic: MockUpstream;
let mcp: McpFixture;
let app: TestApp;
let samples: Sample[];

const MIX = "sk-gw-mix";
const OPENAI_ONLY = "sk-gw-openai-only";

function key(id: string) {
  return fileKey(id, { name: `${id}-name` });
}

const ask = [{ role: "user" as const, content: "hi" }];

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  mcp = await startMcpFixture();
  app = await startApp({
    inference: {
      ...inferenceOptionsFromFile(
        {
          openai: { keys: [key("oa-1"), key("oa-2")], network_config: { base_url: openai.url } },
          anthropic: { keys: [key("an-1")], network_config: { base_url: anthropic.url } },
        },
        [
          {
            id: "vk-mix",
            name: "mix",
            value: MIX,
            provider_configs: [
              { provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 },
              { provider: "anthropic", allowed_models: ["claude-sonnet-4-5"], key_ids: ["*"], weight: 1 },
            ],
            mcp_configs: [{ mcp_client_name: "tools", tools_to_execute: ["*"] }],
          },
          { id: "vk-oa", name: "openai-only", value: OPENAI_ONLY, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] },
        ],
      ),
      // The first key in weighted order is always oa-1, so rotations are deterministic.
      random: () => 0,
    },
  });
  const created = await api(app, "POST", "/api/mcp/client", { name: "tools", connection_type: "http", connection_string: mcp.httpUrl, tools_to_execute: ["*"] });
  assert.equal(created.status, 200, JSON.stringify(created.body));

  const mix = sdk(app, MIX);
  // 3 successes and 2 streams on openai with key oa-1.
  for (let i = 0; i < 3; i++) await mix.chat.completions.create({ model: "openai/gpt-4o-mini", messages: ask });
  for (let i = 0; i < 2; i++) {
    const stream = await mix.chat.completions.create({ model: "openai/gpt-4o-mini", messages: ask, stream: true });
    for await (const _chunk of stream) {
      // drain
    }
  }
  // 1 Responses call on anthropic.
  await mix.responses.create({ model: "anthropic/claude-sonnet-4-5", input: "hi" });
  // 2 policy refusals, no upstream call: a provider outside the key's set, and a model outside allowed_models.
  assert.equal((await refusal(sdk(app, OPENAI_ONLY).chat.completions.create({ model: "anthropic/claude-sonnet-4-5", messages: ask }))).status, 400);
  assert.equal((await refusal(mix.chat.completions.create({ model: "openai/gpt-4o", messages: ask }))).status, 400);
  // 1 key rotation: oa-1 answers 429, oa-2 serves.
  openai.failNext(429, "slow down");
  await mix.chat.completions.create({ model: "openai/gpt-4o-mini", messages: ask });
  // 1 fallback: openai answers 500, anthropic serves at fallback_index 1.
  openai.failNext(500, "broken");
  await mix.chat.completions.create({ model: "openai/gpt-4o-mini", messages: ask, fallbacks: ["anthropic/claude-sonnet-4-5"] } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  // 1 final provider error: openai answers 500 and there is no fallback.
  openai.failNext(500, "broken again");
  assert.equal((await refusal(mix.chat.completions.create({ model: "openai/gpt-4o-mini", messages: ask }))).status, 502);
  // 2 MCP tool calls with the key: one succeeds, one names a tool the upstream does not have.
  for (const [name, status] of [["tools-echo", 200], ["tools-nosuchtool", 404]] as const) {
    const res = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c", type: "function", function: { name, arguments: JSON.stringify({ text: "x" }) } }, { "x-gw-vk": MIX });
    assert.equal(res.status, status);
  }

  // Recording is batched off the request path: scrape until the last request's sample is there (bounded).
  for (let i = 0; i < 100; i++) {
    samples = parseExposition(await fetch(`${app.url}/metrics`).then((r) => r.text()));
    if (total(samples, "gw_upstream_requests_total") === 11 && total(samples, "gw_mcp_client_operation_duration_seconds_count") === 2) break;
    await new Promise((r) => setTimeout(r, 20));
  }
});

after(async () => {
  await app?.stop();
  await openai?.close();
  await anthropic?.close();
  await mcp?.close();
});

const OA = { provider: "openai", model: "gpt-4o-mini", virtual_key_id: "vk-mix", virtual_key_name: "mix" };

test("gw_upstream_requests_total counts every request once, policy refusals included", () => {
  assert.equal(total(samples, "gw_upstream_requests_total"), 11);
  assert.equal(total(samples, "gw_upstream_requests_total", { ...OA, method: "chat", selected_key_id: "oa-1", fallback_index: "0" }), 5);
  assert.equal(total(samples, "gw_upstream_requests_total", { provider: "anthropic", method: "responses", fallback_index: "0" }), 1);
  assert.equal(total(samples, "gw_upstream_requests_total", { provider: "anthropic", virtual_key_id: "vk-oa", selected_key_id: "" }), 1);
});

test("gw_success_requests_total counts the successes by provider, key and fallback index", () => {
  assert.equal(total(samples, "gw_success_requests_total"), 8);
  assert.equal(total(samples, "gw_success_requests_total", { ...OA, selected_key_id: "oa-1", fallback_index: "0" }), 5);
  assert.equal(total(samples, "gw_success_requests_total", { ...OA, selected_key_id: "oa-2", selected_key_name: "oa-2-name" }), 1);
  assert.equal(total(samples, "gw_success_requests_total", { provider: "anthropic", model: "claude-sonnet-4-5", fallback_index: "1" }), 1);
  assert.equal(total(samples, "gw_success_requests_total", { provider: "anthropic", method: "responses" }), 1);
});

test("gw_error_requests_total counts refusals and provider errors by status code and error type", () => {
  assert.equal(total(samples, "gw_error_requests_total"), 3);
  assert.equal(total(samples, "gw_error_requests_total", { provider: "anthropic", status_code: "400", error_type: "policy_provider_not_allowed", selected_key_id: "" }), 1);
  assert.equal(total(samples, "gw_error_requests_total", { provider: "openai", model: "gpt-4o", status_code: "400", error_type: "caller_model_not_allowed" }), 1);
  assert.equal(total(samples, "gw_error_requests_total", { ...OA, status_code: "502", error_type: "provider_unavailable", selected_key_id: "", selected_key_name: "" }), 1);
});

test("a fallback marks core in routing_engine_used, a first attempt does not", () => {
  const fallback = samples.find((s) => s.name === "gw_success_requests_total" && s.labels["fallback_index"] === "1");
  assert.ok(fallback);
  assert.match(fallback.labels["routing_engine_used"] ?? "", /core/);
  const first = samples.find((s) => s.name === "gw_success_requests_total" && s.labels["selected_key_id"] === "oa-1" && s.labels["fallback_index"] === "0");
  assert.doesNotMatch(first?.labels["routing_engine_used"] ?? "", /core/);
});

test("gw_key_rotation_events_total counts the rotation away from the key that answered 429", () => {
  assert.equal(total(samples, "gw_key_rotation_events_total"), 1);
  const rotation = samples.find((s) => s.name === "gw_key_rotation_events_total");
  assert.equal(rotation?.labels["provider"], "openai");
  assert.match(JSON.stringify(rotation?.labels), /oa-1/);
  assert.match(JSON.stringify(rotation?.labels), /429/);
});

test("gw_request_retries is observed once per served or failed request, with the retries it took", () => {
  // Policy refusals count 0 retries; the rotation and the fallback 1 each.
  assert.equal(total(samples, "gw_request_retries_count"), 11);
  assert.equal(total(samples, "gw_request_retries_sum"), 2);
  assert.equal(total(samples, "gw_request_retries_bucket", { le: "0" }), 9);
});

test("streams are timed to their first token and between tokens", () => {
  assert.equal(total(samples, "gw_stream_first_token_latency_seconds_count"), 2);
  assert.ok(total(samples, "gw_stream_inter_token_latency_seconds_count") > 0);
});

test("tokens and cost are counted for served requests only", () => {
  // The mock OpenAI reports 11 prompt tokens per chat; 5 served on oa-1, 1 on oa-2.
  assert.equal(total(samples, "gw_input_tokens_total", { provider: "openai" }), 66);
  assert.ok(total(samples, "gw_cost_total", { provider: "openai" }) > 0);
  assert.ok(total(samples, "gw_output_tokens_total", { provider: "anthropic" }) > 0);
});

test("the gateway's own overhead is observed once per served request", () => {
  assert.equal(total(samples, "gw_overhead_latency_microseconds_count"), 8);
});

test("gw_active_requests is back to zero", () => {
  assert.equal(total(samples, "gw_active_requests"), 0);
});

test("the upstream latency histogram counts every attempt, failed ones as is_success false", () => {
  // 9 attempts reached a provider and succeeded (8 served requests); 3 failed (429, 500, 500).
  assert.equal(total(samples, "gw_upstream_latency_seconds_count", { is_success: "true" }), 8);
  assert.equal(total(samples, "gw_upstream_latency_seconds_count", { is_success: "false" }), 3);
});

test("MCP tool calls are counted with the caller's virtual key and error_type", () => {
  assert.equal(total(samples, "gw_mcp_client_operation_duration_seconds_count", { mcp_client: "tools", mcp_tool_name: "echo", error_type: "", virtual_key_id: "vk-mix" }), 1);
  assert.equal(total(samples, "gw_mcp_client_operation_duration_seconds_count", { mcp_client: "tools", mcp_tool_name: "nosuchtool", error_type: "_OTHER", virtual_key_id: "vk-mix" }), 1);
});

test("http_requests_total counts the /v1 requests by route and status", () => {
  assert.equal(total(samples, "http_requests_total", { path: "/v1/chat/completions", status: "200" }), 7);
  assert.equal(total(samples, "http_requests_total", { path: "/v1/chat/completions", status: "400" }), 2);
  assert.equal(total(samples, "http_requests_total", { path: "/v1/chat/completions", status: "502" }), 1);
  assert.equal(total(samples, "http_requests_total", { path: "/v1/responses", status: "200" }), 1);
});
