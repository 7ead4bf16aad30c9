/**
 * OpenTelemetry traces through the real app, exported over OTLP/HTTP to a receiver inside the test that
 * decodes the protobuf: the span tree and its parent links for a plain call, a stream, a fallback, an
 * agent-mode call with two tool calls and a /mcp tool call; the attributes, and no secret among them;
 * traceparent at the mock upstream and the MCP server; the access log's ids; an unreachable collector.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import type { OtlpTracingOptions } from "../../src/telemetry/otlp-tracing.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { call, startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { closeMcp, connectMcp, resultText } from "../helpers/mcp-client.js";
import { closeRelay, connectRelay } from "../helpers/relay-client.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../helpers/otlp-receiver.js";

const PLAIN_KEY = "sk-gw-trace-plain-secret";
const AGENT_KEY = "sk-gw-trace-agent-secret";
const OPENAI_SECRET = "sk-openai-trace-secret";
const ANTHROPIC_SECRET = "sk-ant-trace-secret";
const SERVER = 2;
const CLIENT = 3;

let model: ScriptedModel;
let anthropic: MockUpstream;
let embedder: MockUpstream;
let docs: McpFixture;
let receiver: OtlpReceiver;
let app: TestApp;

function tracingTo(url: string): OtlpTracingOptions {
  return {
    url: `${url}/v1/traces`,
    headers: { "x-collector-token": "collector-token" },
    serviceName: "gw-test",
    sampler: "parentbased_always_on",
    sampleRatio: 1,
    captureContent: false,
    exportDelayMs: 20,
  };
}

/** A fresh W3C traceparent of a caller: its trace id and span id. */
function callerContext(): { traceId: string; spanId: string; header: string } {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

/** The spans of one trace once `count` spans named as listed have arrived. */
async function traceOf(traceId: string, names: string[]): Promise<ReceivedSpan[]> {
  const spans = await receiver.waitFor((all) => names.every((name) => all.some((s) => s.traceId === traceId && s.name === name)));
  return spans.filter((s) => s.traceId === traceId);
}

function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `expected one span named ${name}, got ${found.length}: ${spans.map((s) => s.name).join(", ")}`);
  return found[0] as ReceivedSpan;
}

function assertNoSecret(spans: ReceivedSpan[]): void {
  const text = JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes })));
  for (const secret of [PLAIN_KEY, AGENT_KEY, OPENAI_SECRET, ANTHROPIC_SECRET, "Bearer"]) assert.ok(!text.includes(secret), `a span carries ${secret}`);
}

function chat(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }], ...body }, { authorization: `Bearer ${key}`, ...headers });
}

before(async () => {
  receiver = await startOtlpReceiver();
  model = await startScriptedModel();
  anthropic = await startMockAnthropic();
  embedder = await startMockOpenAi();
  docs = await startMcpFixture();
  const all = { allowed_models: ["*"], key_ids: ["*"], weight: 1 };
  app = await startApp({
    tracing: tracingTo(receiver.url),
    inference: inferenceOptionsFromFile(
      {
        openai: {
          keys: [
            { id: "oa-1", name: "oa-1", value: OPENAI_SECRET },
            { id: "oa-2", name: "oa-2", value: `${OPENAI_SECRET}-2` },
          ],
          network_config: { base_url: model.url },
        },
        anthropic: { keys: [{ id: "an-1", name: "an-1", value: ANTHROPIC_SECRET, models: ["claude-sonnet-4-5"] }], network_config: { base_url: anthropic.url } },
        azure: { keys: [{ id: "az-1", name: "az-1", value: "sk-azure-trace", models: ["embed-small"], azure_key_config: { endpoint: embedder.url, deployments: { "embed-small": "dep-embed" }, api_version: "2024-10-21" } }] },
      },
      [
        { id: "vk-plain", name: "plain", value: PLAIN_KEY, provider_configs: [{ provider: "openai", ...all }, { provider: "anthropic", ...all }, { provider: "azure", ...all }], mcp_configs: [] },
        { id: "vk-agent", name: "agent", value: AGENT_KEY, provider_configs: [{ provider: "openai", ...all }], mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["*"] }] },
      ],
    ),
  });
  const res = await api(app, "POST", "/api/mcp/client", { name: "docs", connection_type: "http", connection_string: docs.httpUrl, tools_to_execute: ["*"], tools_to_auto_execute: ["*"] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
});

after(async () => {
  await app?.stop();
  await Promise.all([model?.close(), anthropic?.close(), embedder?.close(), docs?.close(), receiver?.close()]);
});

describe("a plain call", () => {
  test("continues the caller's trace: SERVER span, route and one CLIENT span, with GenAI attributes and dimensions", async () => {
    model.script({ text: "plain answer", usage: { input: 12, output: 7 } });
    const caller = callerContext();
    const res = await chat(PLAIN_KEY, {}, { traceparent: caller.header, "x-gw-dim-team": "red" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const spans = await traceOf(caller.traceId, ["POST /v1/chat/completions", "route", "chat gpt-4o-mini"]);
    const server = one(spans, "POST /v1/chat/completions");
    const route = one(spans, "route");
    const client = one(spans, "chat gpt-4o-mini");
    assert.equal(server.kind, SERVER);
    assert.equal(server.parentSpanId, caller.spanId);
    assert.equal(server.serviceName, "gw-test");
    assert.equal(route.parentSpanId, server.spanId);
    assert.equal(client.parentSpanId, server.spanId);
    assert.equal(client.kind, CLIENT);
    assert.equal(server.attributes["http.route"], "/v1/chat/completions");
    assert.equal(server.attributes["http.response.status_code"], 200);
    assert.equal(server.attributes["gw.virtual_key.id"], "vk-plain");
    assert.equal(server.attributes["gw.dim.team"], "red");
    assert.equal(route.attributes["gw.route.provider"], "openai");
    assert.equal(route.attributes["gw.route.key_id"], client.attributes["gw.provider.key_id"]);
    assert.deepEqual(
      {
        op: client.attributes["gen_ai.operation.name"],
        provider: client.attributes["gen_ai.provider.name"],
        request: client.attributes["gen_ai.request.model"],
        response: client.attributes["gen_ai.response.model"],
        input: client.attributes["gen_ai.usage.input_tokens"],
        output: client.attributes["gen_ai.usage.output_tokens"],
        finish: client.attributes["gen_ai.response.finish_reasons"],
        status: client.attributes["http.response.status_code"],
        fallback: client.attributes["gw.fallback_index"],
        retry: client.attributes["gw.retry_index"],
      },
      { op: "chat", provider: "openai", request: "gpt-4o-mini", response: "gpt-4o-mini", input: 12, output: 7, finish: ["stop"], status: 200, fallback: 0, retry: 0 },
    );
    assert.ok(["oa-1", "oa-2"].includes(String(client.attributes["gw.provider.key_id"])));
    assert.equal(client.attributes["gen_ai.input.messages"], undefined, "content recorded without capture_content");
    assertNoSecret(spans);
  });

  test("sends the attempt's traceparent upstream, in the caller's trace", async () => {
    const caller = callerContext();
    const res = await chat(PLAIN_KEY, {}, { traceparent: caller.header });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const sent = model.requests.at(-1)?.headers["traceparent"] ?? "";
    const [, traceId, parentId] = sent.split("-");
    assert.equal(traceId, caller.traceId);
    const spans = await traceOf(caller.traceId, ["chat gpt-4o-mini"]);
    assert.equal(parentId, one(spans, "chat gpt-4o-mini").spanId);
  });

  test("writes the trace and span ids on the request's access log line", async () => {
    const caller = callerContext();
    const res = await chat(PLAIN_KEY, {}, { traceparent: caller.header });
    assert.equal(res.status, 200);
    const line = app.logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["msg"] === "request" && l["trace_id"] === caller.traceId);
    assert.ok(line, "no request line carries the caller's trace id");
    const spans = await traceOf(caller.traceId, ["POST /v1/chat/completions"]);
    assert.equal(line["span_id"], one(spans, "POST /v1/chat/completions").spanId);
  });

  test("traces an admin REST call under its route template", async () => {
    const caller = callerContext();
    const res = await api(app, "GET", "/api/mcp/clients", undefined, { traceparent: caller.header });
    assert.equal(res.status, 200);
    const spans = await traceOf(caller.traceId, ["GET /api/mcp/clients"]);
    assert.equal(one(spans, "GET /api/mcp/clients").kind, SERVER);
  });
});

test("traces a Connect RPC as a SERVER span named by its procedure", async () => {
  const caller = callerContext();
  const res = await fetch(`${app.url}/gw.admin.v1.McpClientService/ListMcpClients`, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent: caller.header },
    body: "{}",
  });
  assert.equal(res.status, 200, await res.text());
  const spans = await traceOf(caller.traceId, ["POST /gw.admin.v1.McpClientService/ListMcpClients"]);
  const server = one(spans, "POST /gw.admin.v1.McpClientService/ListMcpClients");
  assert.equal(server.kind, SERVER);
  assert.equal(server.parentSpanId, caller.spanId);
});

test("a streamed call's CLIENT span has a first-token event and ends after it, inside the SERVER span", async () => {
  model.script({ text: "streamed answer" });
  const caller = callerContext();
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${PLAIN_KEY}`, traceparent: caller.header },
    body: JSON.stringify({ model: "openai/gpt-4o-mini", stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /\[DONE\]/);
  const spans = await traceOf(caller.traceId, ["POST /v1/chat/completions", "chat gpt-4o-mini"]);
  const server = one(spans, "POST /v1/chat/completions");
  const client = one(spans, "chat gpt-4o-mini");
  assert.equal(client.parentSpanId, server.spanId);
  assert.equal(client.attributes["gw.stream"], true);
  const first = client.events.find((e) => e.name === "gen_ai.first_token");
  assert.ok(first, "no first-token event");
  assert.ok(client.endNs >= first.timeNs, "the stream's span ended before its first token");
  // Each span anchors its clock to the wall clock when it starts (millisecond precision), so ends of two spans compare within 2 ms.
  assert.ok(server.endNs + 2_000_000n >= client.endNs, "the SERVER span ended before the stream's last byte");
});

test("a routing rule whose condition fails logs the request's trace and span ids", async () => {
  const rule = await api(app, "POST", "/api/governance/routing-rules", {
    name: "trace-missing-header",
    scope: "virtual_key",
    scope_id: "vk-plain",
    cel_expression: `headers["x-trace-missing"] == "1"`,
    targets: [{ provider: "anthropic" }],
  });
  assert.equal(rule.status, 200, JSON.stringify(rule.body));
  try {
    const caller = callerContext();
    assert.equal((await chat(PLAIN_KEY, {}, { traceparent: caller.header })).status, 200);
    const server = one(await traceOf(caller.traceId, ["POST /v1/chat/completions"]), "POST /v1/chat/completions");
    const line = app.logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["routing_rule_name"] === "trace-missing-header" && l["trace_id"] === caller.traceId);
    assert.ok(line, "the rule failure's log line does not carry the trace id");
    assert.equal(line["span_id"], server.spanId);
  } finally {
    await api(app, "DELETE", `/api/governance/routing-rules/${rule.body.routing_rule.id}`);
  }
});

test("a call that falls back has sibling CLIENT spans: the failed primary, then fallback 1", async () => {
  model.failNext(500, "openai broke");
  const caller = callerContext();
  const res = await chat(PLAIN_KEY, { fallbacks: ["anthropic/claude-sonnet-4-5"] }, { traceparent: caller.header });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const spans = await traceOf(caller.traceId, ["POST /v1/chat/completions", "chat gpt-4o-mini", "chat claude-sonnet-4-5"]);
  const server = one(spans, "POST /v1/chat/completions");
  const primary = one(spans, "chat gpt-4o-mini");
  const fallback = one(spans, "chat claude-sonnet-4-5");
  assert.equal(primary.parentSpanId, server.spanId);
  assert.equal(fallback.parentSpanId, server.spanId);
  assert.equal(primary.attributes["gw.fallback_index"], 0);
  assert.equal(primary.attributes["http.response.status_code"], 500);
  assert.equal(primary.attributes["error.type"], "provider_unavailable");
  assert.equal(primary.statusCode, 2);
  assert.equal(fallback.attributes["gw.fallback_index"], 1);
  assert.equal(fallback.attributes["gen_ai.provider.name"], "anthropic");
  assert.equal(fallback.attributes["error.type"], undefined);
  assert.equal(anthropic.requests.at(-1)?.headers["traceparent"]?.split("-")[1], caller.traceId);
  const line = app.logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["msg"] === "falling back to the next provider" && l["trace_id"] === caller.traceId);
  assert.ok(line, "the fallback's log line does not carry the trace id");
  assert.equal(line["span_id"], server.spanId);
  assertNoSecret(spans);
});

test("a key rotation after a 429 is a sibling CLIENT span with the next retry index and the other key", async () => {
  model.failNext(429, "slow down");
  const caller = callerContext();
  const res = await chat(PLAIN_KEY, {}, { traceparent: caller.header });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const spans = await receiver.waitFor((all) => all.filter((s) => s.traceId === caller.traceId && s.name === "chat gpt-4o-mini").length === 2 && all.some((s) => s.traceId === caller.traceId && s.kind === SERVER));
  const server = one(spans.filter((s) => s.traceId === caller.traceId), "POST /v1/chat/completions");
  const attempts = spans.filter((s) => s.traceId === caller.traceId && s.name === "chat gpt-4o-mini").sort((a, b) => Number(a.attributes["gw.retry_index"]) - Number(b.attributes["gw.retry_index"]));
  const [first, second] = attempts as [ReceivedSpan, ReceivedSpan];
  assert.equal(first.parentSpanId, second.parentSpanId);
  assert.equal(first.parentSpanId, server.spanId);
  assert.deepEqual([first.attributes["gw.retry_index"], second.attributes["gw.retry_index"]], [0, 1]);
  assert.equal(first.attributes["http.response.status_code"], 429);
  assert.equal(first.attributes["error.type"], "provider_rate_limited");
  assert.notEqual(first.attributes["gw.provider.key_id"], second.attributes["gw.provider.key_id"]);
  assertNoSecret(spans.filter((s) => s.traceId === caller.traceId));
});

/** An Anthropic SDK client of the gateway that continues `traceparent`. */
function anthropicClient(traceparent: string): Anthropic {
  return new Anthropic({ apiKey: PLAIN_KEY, baseURL: `${app.url}/anthropic`, maxRetries: 0, defaultHeaders: { traceparent } });
}

test("a /anthropic/v1/messages call is a SERVER span with a chat CLIENT span under it, its traceparent sent upstream", async () => {
  const caller = callerContext();
  const message = await anthropicClient(caller.header).messages.create({ model: "anthropic/claude-sonnet-4-5", max_tokens: 20, messages: [{ role: "user", content: "hello there" }] });
  assert.equal(message.type, "message");
  const spans = await traceOf(caller.traceId, ["POST /anthropic/v1/messages", "chat claude-sonnet-4-5"]);
  const server = one(spans, "POST /anthropic/v1/messages");
  const client = one(spans, "chat claude-sonnet-4-5");
  assert.equal(server.kind, SERVER);
  assert.equal(server.parentSpanId, caller.spanId);
  assert.equal(server.attributes["gw.virtual_key.id"], "vk-plain");
  assert.equal(client.kind, CLIENT);
  assert.equal(client.parentSpanId, server.spanId);
  assert.deepEqual(
    { op: client.attributes["gen_ai.operation.name"], provider: client.attributes["gen_ai.provider.name"], input: client.attributes["gen_ai.usage.input_tokens"], finish: client.attributes["gen_ai.response.finish_reasons"] },
    // The span counts every input token, cached ones included (Anthropic reports those apart).
    { op: "chat", provider: "anthropic", input: message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0) + (message.usage.cache_creation_input_tokens ?? 0), finish: [message.stop_reason] },
  );
  const [, traceId, parentId] = (anthropic.requests.at(-1)?.headers["traceparent"] ?? "").split("-");
  assert.deepEqual([traceId, parentId], [caller.traceId, client.spanId]);
  assertNoSecret(spans);
});

test("an upstream count_tokens call is a chat CLIENT span under the count_tokens SERVER span", async () => {
  const caller = callerContext();
  const counted = await anthropicClient(caller.header).messages.countTokens({ model: "anthropic/claude-sonnet-4-5", messages: [{ role: "user", content: "count me" }] });
  const spans = await traceOf(caller.traceId, ["POST /anthropic/v1/messages/count_tokens", "chat claude-sonnet-4-5"]);
  const server = one(spans, "POST /anthropic/v1/messages/count_tokens");
  const client = one(spans, "chat claude-sonnet-4-5");
  assert.equal(client.parentSpanId, server.spanId);
  assert.equal(client.attributes["gen_ai.usage.input_tokens"], counted.input_tokens);
  assert.equal(anthropic.requests.at(-1)?.path, "/v1/messages/count_tokens");
  assert.equal(anthropic.requests.at(-1)?.headers["traceparent"]?.split("-")[2], client.spanId);
});

test("a /v1/embeddings call has an embeddings CLIENT span under its SERVER span", async () => {
  const caller = callerContext();
  const res = await api(app, "POST", "/v1/embeddings", { model: "azure/embed-small", input: ["alpha"] }, { authorization: `Bearer ${PLAIN_KEY}`, traceparent: caller.header });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const spans = await receiver.waitFor((all) => all.some((s) => s.traceId === caller.traceId && s.kind === SERVER) && all.some((s) => s.traceId === caller.traceId && s.kind === CLIENT));
  const ours = spans.filter((s) => s.traceId === caller.traceId);
  const server = one(ours, "POST /v1/embeddings");
  const [client, ...others] = ours.filter((s) => s.kind === CLIENT);
  assert.equal(others.length, 0);
  assert.equal(client?.parentSpanId, server.spanId);
  assert.equal(client?.attributes["gen_ai.operation.name"], "embeddings");
  assert.equal(client?.attributes["gen_ai.provider.name"], "azure");
  assert.equal(embedder.requests.at(-1)?.headers["traceparent"]?.split("-")[2], client?.spanId);
  assertNoSecret(ours);
});

test("an agent-mode call has one span per iteration, its model call and its two tool calls under it", async () => {
  model.script({ calls: [call("docs-echo", { text: "one" }, "call_1"), call("docs-echo", { text: "two" }, "call_2")] }, { text: "done" });
  const metasBefore = docs.echoMetas.length;
  const caller = callerContext();
  const res = await chat(AGENT_KEY, {}, { traceparent: caller.header });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const spans = await receiver.waitFor((all) => all.filter((s) => s.traceId === caller.traceId && s.name === "agent iteration").length === 2 && all.some((s) => s.traceId === caller.traceId && s.kind === SERVER));
  const mine = spans.filter((s) => s.traceId === caller.traceId);
  const server = one(mine, "POST /v1/chat/completions");
  const iterations = mine.filter((s) => s.name === "agent iteration").sort((a, b) => Number(a.attributes["gw.agent.iteration"]) - Number(b.attributes["gw.agent.iteration"]));
  assert.deepEqual(iterations.map((s) => s.parentSpanId), [server.spanId, server.spanId]);
  const [firstIteration, secondIteration] = iterations as [ReceivedSpan, ReceivedSpan];
  const tools = mine.filter((s) => s.name === "tools/call echo");
  assert.equal(tools.length, 2);
  for (const tool of tools) {
    assert.equal(tool.parentSpanId, firstIteration.spanId);
    assert.equal(tool.attributes["mcp.method.name"], "tools/call");
    assert.equal(tool.attributes["gen_ai.tool.name"], "echo");
    assert.equal(tool.attributes["gw.mcp.client.name"], "docs");
  }
  const models = mine.filter((s) => s.name === "chat gpt-4o-mini");
  assert.deepEqual(models.map((s) => s.parentSpanId).sort(), [firstIteration.spanId, secondIteration.spanId].sort());
  const metas = docs.echoMetas.slice(metasBefore);
  assert.equal(metas.length, 2);
  for (const meta of metas) assert.equal(String(meta["traceparent"]).split("-")[1], caller.traceId);
  assertNoSecret(mine);
});

test("a /mcp tool call is a tools/call span under the POST /mcp SERVER span, with no credential", async () => {
  const client = await connectMcp(app, "streamable", { authorization: `Bearer ${AGENT_KEY}` });
  try {
    const result = await client.callTool({ name: "docs-echo", arguments: { text: "via mcp" } });
    assert.equal(resultText(result), "via mcp");
  } finally {
    await closeMcp(client);
  }
  const spans = await receiver.waitFor((all) => all.some((s) => s.name === "tools/call echo" && s.attributes["gw.mcp.tool.prefixed_name"] === "docs-echo" && all.some((p) => p.spanId === s.parentSpanId && p.name === "POST /mcp")));
  const tool = spans.find((s) => s.name === "tools/call echo" && spans.some((p) => p.spanId === s.parentSpanId && p.name === "POST /mcp")) as ReceivedSpan;
  const server = spans.find((s) => s.spanId === tool.parentSpanId) as ReceivedSpan;
  assert.equal(server.kind, SERVER);
  assert.equal(server.attributes["gw.virtual_key.id"], "vk-agent");
  assert.equal(tool.attributes["gw.mcp.auth_type"], "none");
  assertNoSecret([server, tool]);
});

test("a tool call relayed by /mcp/<client> is a tools/call CLIENT span under the request's SERVER span", async () => {
  const client = await connectRelay(app, "docs", { headers: { authorization: `Bearer ${AGENT_KEY}` } });
  try {
    assert.equal(resultText(await client.callTool({ name: "echo", arguments: { text: "relayed" } })), "relayed");
  } finally {
    await closeRelay(client);
  }
  const isRelayed = (s: ReceivedSpan) => s.name === "tools/call echo" && s.attributes["gw.mcp.tool.prefixed_name"] === undefined;
  const spans = await receiver.waitFor((all) => all.some((s) => isRelayed(s) && all.some((p) => p.spanId === s.parentSpanId && p.name === "POST /mcp/{client}")));
  const tool = spans.find((s) => isRelayed(s) && spans.some((p) => p.spanId === s.parentSpanId && p.name === "POST /mcp/{client}")) as ReceivedSpan;
  const server = spans.find((s) => s.spanId === tool.parentSpanId) as ReceivedSpan;
  assert.equal(tool.kind, CLIENT);
  assert.equal(tool.attributes["mcp.method.name"], "tools/call");
  assert.equal(tool.attributes["gw.mcp.client.name"], "docs");
  assert.equal(server.attributes["gw.virtual_key.id"], "vk-agent");
  assertNoSecret([server, tool]);
});

test("a POST /v1/mcp/tool/execute call is a tools/call span under its SERVER span, with the key's id and no credential", async () => {
  const caller = callerContext();
  const res = await api(
    app,
    "POST",
    "/v1/mcp/tool/execute",
    { id: "call_x", type: "function", function: { name: "docs-echo", arguments: JSON.stringify({ text: "executed" }) } },
    { authorization: `Bearer ${AGENT_KEY}`, traceparent: caller.header },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const spans = await traceOf(caller.traceId, ["POST /v1/mcp/tool/execute", "tools/call echo"]);
  const server = one(spans, "POST /v1/mcp/tool/execute");
  const tool = one(spans, "tools/call echo");
  assert.equal(tool.parentSpanId, server.spanId);
  assert.equal(tool.kind, CLIENT);
  assert.equal(tool.attributes["gw.mcp.tool.prefixed_name"], "docs-echo");
  assert.equal(server.attributes["gw.virtual_key.id"], "vk-agent");
  assertNoSecret(spans);
});

test("a tool execution over Connect is a tools/call span under the RPC's SERVER span", async () => {
  const caller = callerContext();
  const res = await fetch(`${app.url}/gw.inference.v1.McpToolService/ExecuteTool`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${AGENT_KEY}`, traceparent: caller.header },
    body: JSON.stringify({ id: "call_y", type: "function", function: { name: "docs-echo", arguments: JSON.stringify({ text: "over connect" }) } }),
  });
  assert.equal(res.status, 200, await res.text());
  const spans = await traceOf(caller.traceId, ["POST /gw.inference.v1.McpToolService/ExecuteTool", "tools/call echo"]);
  assert.equal(one(spans, "tools/call echo").parentSpanId, one(spans, "POST /gw.inference.v1.McpToolService/ExecuteTool").spanId);
});

test("sends the collector's headers with every export", async () => {
  await receiver.waitFor((all) => all.length > 0);
  assert.equal(receiver.requests[0]?.headers["x-collector-token"], "collector-token");
});

test("loads the W3C propagator beyond the OpenTelemetry API only when tracing is configured", () => {
  // This process runs a traced app, so its module registry must list the propagator's package: the
  // tracing-off probe's check that nothing but the API is loaded can fail.
  const loaded = Object.keys(createRequire(import.meta.url).cache);
  assert.ok(loaded.some((path) => path.includes("/@opentelemetry/core/")));
});

describe("capture_content", () => {
  let capturing: TestApp;

  before(async () => {
    capturing = await startApp({
      tracing: { ...tracingTo(receiver.url), captureContent: true },
      inference: inferenceOptionsFromFile({ openai: { keys: [{ id: "oa-1", name: "oa-1", value: OPENAI_SECRET }], network_config: { base_url: model.url } } }, []),
    });
  });

  after(async () => {
    await capturing?.stop();
  });

  test("records the prompt and the answer on the CLIENT span when on", async () => {
    model.script({ text: "the captured answer" });
    const caller = callerContext();
    const res = await api(capturing, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "the captured prompt" }] }, { traceparent: caller.header });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const client = one(await traceOf(caller.traceId, ["chat gpt-4o-mini"]), "chat gpt-4o-mini");
    assert.match(String(client.attributes["gen_ai.input.messages"]), /the captured prompt/);
    assert.match(String(client.attributes["gen_ai.output.messages"]), /the captured answer/);
  });
});

describe("an unreachable collector", () => {
  let down: TestApp;

  before(async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    down = await startApp({
      tracing: { ...tracingTo(`http://127.0.0.1:${port}`), dropReportIntervalMs: 50 },
      inference: inferenceOptionsFromFile({ openai: { keys: [{ id: "oa-1", name: "oa-1", value: OPENAI_SECRET }], network_config: { base_url: model.url } } }, []),
    });
  });

  after(async () => {
    await down?.stop();
  });

  test("fails no request, and logs the spans it lost", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await api(down, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: `call ${i}` }] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    for (let i = 0; i < 200 && !down.logLines.some((l) => l.includes("tracing: spans were dropped")); i++) await new Promise((r) => setTimeout(r, 50));
    const line = down.logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["msg"] === "tracing: spans were dropped");
    assert.ok(line, "no line reports the lost spans");
    assert.ok(Number(line["dropped_spans"]) > 0);
  });
});
