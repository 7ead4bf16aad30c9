/**
 * Agent mode on POST /v1/chat/completions through the real app: a scripted model answers turn by turn,
 * fixture MCP servers over streamable HTTP run the tools. Shows the tool round trip, parallel execution,
 * the depth limit with live settings, the mixed-turn summary, error results (timeout, tool failure,
 * refusals) with the loop going on, tools the gateway must not run, summed usage, and the openai SDK
 * driving a conversation end to end.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { call, scriptedInference, startScriptedModel, toolResults, type ScriptedModel } from "../fixtures/scripted-model.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";
import { sdk } from "../helpers/inference.js";

const KEY = "sk-gw-agent";
const MODEL = "openai/gpt-4o-mini";

let model: ScriptedModel;
/** Client `docs`: every tool auto-executed. */
let docs: McpFixture;
/** Client `manual`: every tool offered, none auto-executed. */
let manual: McpFixture;
/** Client `limited`: only echo in tools_to_execute, every tool in tools_to_auto_execute. */
let limited: McpFixture;
let app: TestApp;

async function createClient(name: string, fixture: McpFixture, toolsToExecute: string[], toolsToAutoExecute: string[]): Promise<void> {
  const res = await api(app, "POST", "/api/mcp/client", {
    name,
    connection_type: "http",
    connection_string: fixture.httpUrl,
    tools_to_execute: toolsToExecute,
    tools_to_auto_execute: toolsToAutoExecute,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

/** POST /v1/chat/completions with the agent key; returns status and JSON body. */
function chat(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return api(app, "POST", "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "go" }], ...body }, { authorization: `Bearer ${KEY}`, ...headers });
}

async function toolManager(config: Record<string, unknown>): Promise<void> {
  const res = await api(app, "PUT", "/api/settings/mcp/tool-manager-config", config);
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

before(async () => {
  model = await startScriptedModel();
  docs = await startMcpFixture({ resultShapeTools: true });
  manual = await startMcpFixture();
  limited = await startMcpFixture();
  const mcpConfigs = ["docs", "manual", "limited"].map((name) => ({ mcp_client_name: name, tools_to_execute: ["*"] }));
  app = await startApp({
    inference: scriptedInference(model, [
      { id: "vk-agent", name: "agent", value: KEY, provider_configs: [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }], mcp_configs: mcpConfigs },
    ]),
  });
  await createClient("docs", docs, ["*"], ["*"]);
  await createClient("manual", manual, ["*"], []);
  await createClient("limited", limited, ["echo"], ["*"]);
});

after(async () => {
  await app?.stop();
  await Promise.all([model?.close(), docs?.close(), manual?.close(), limited?.close()]);
});

beforeEach(() => {
  model.script();
  model.otherwise = { text: "done" };
});

test("runs one tool round, then returns the model's final answer", async () => {
  const sent = model.requests.length;
  model.script({ calls: [call("docs-echo", { text: "hello tools" }, "call_1")] }, (body) => ({ text: `the tool said ${toolResults(body)["call_1"]}` }));
  const res = await chat({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.choices[0].message.content, "the tool said hello tools");
  assert.equal(res.body.choices[0].finish_reason, "stop");
  assert.equal(model.requests.length - sent, 2);
  const followUp = model.bodies().at(-1) as { messages: Record<string, unknown>[] };
  assert.deepEqual(
    followUp.messages.slice(1).map((m) => m["role"]),
    ["assistant", "tool"],
  );
  assert.deepEqual(followUp.messages[1]?.["tool_calls"], [{ id: "call_1", type: "function", function: { name: "docs-echo", arguments: '{"text":"hello tools"}' } }]);
  assert.deepEqual(followUp.messages[2], { role: "tool", tool_call_id: "call_1", content: "hello tools" });
});

test("executes the tool calls of one turn concurrently and answers them in call order", async () => {
  docs.concurrent.reset();
  model.script({ calls: [call("docs-slow", { ms: 1000 }, "call_a"), call("docs-slow", { ms: 1000 }, "call_b"), call("docs-slow", { ms: 1000 }, "call_c")] }, { text: "all done" });
  const res = await chat({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(docs.concurrent.max, 3);
  const followUp = model.bodies().at(-1) as { messages: Record<string, unknown>[] };
  assert.deepEqual(
    followUp.messages.filter((m) => m["role"] === "tool").map((m) => m["tool_call_id"]),
    ["call_a", "call_b", "call_c"],
  );
});

test("stops at max_agent_depth model calls, read live from the tool manager settings, and returns the pending calls", async () => {
  model.otherwise = { calls: [call("docs-echo", { text: "again" })] };
  try {
    for (const depth of [2, 4]) {
      await toolManager({ max_agent_depth: depth });
      const sent = model.requests.length;
      const echoes = docs.callCount("echo");
      const res = await chat({});
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(model.requests.length - sent, depth);
      assert.equal(docs.callCount("echo") - echoes, depth - 1);
      assert.equal(res.body.choices[0].finish_reason, "tool_calls");
      assert.equal(res.body.choices[0].message.tool_calls[0].function.name, "docs-echo");
    }
  } finally {
    await toolManager({ max_agent_depth: 10 });
  }
});

test("a mixed turn runs the auto tools and returns their summary, the pending calls and finish_reason stop", async () => {
  const sent = model.requests.length;
  const adds = manual.callCount("add");
  const pendingCall = call("manual-add", { a: 1, b: 2 }, "call_manual");
  model.script({ text: "working on it", calls: [call("docs-echo", { text: "auto ran" }, "call_auto"), pendingCall] });
  const res = await chat({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const choice = res.body.choices[0];
  assert.equal(choice.finish_reason, "stop");
  assert.deepEqual(JSON.parse(choice.message.content), { call_auto: { tool: "docs-echo", content: "auto ran", is_error: false } });
  assert.deepEqual(choice.message.tool_calls, [{ id: "call_manual", type: "function", function: { name: "manual-add", arguments: '{"a":1,"b":2}' } }]);
  assert.equal(model.requests.length - sent, 1);
  assert.equal(manual.callCount("add"), adds);
});

test("a tool that exceeds tool_execution_timeout yields an error result and the loop goes on", async () => {
  await toolManager({ tool_execution_timeout: "300ms" });
  try {
    model.script({ calls: [call("docs-slow", { ms: 10_000 }, "call_slow")] }, (body) => ({ text: `result: ${toolResults(body)["call_slow"]}` }));
    const res = await chat({});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.choices[0].message.content, /^result: Error: tool docs-slow timed out/);
  } finally {
    await toolManager({ tool_execution_timeout: "30s" });
  }
});

test("a tool that fails yields its error text as the result and the loop goes on", async () => {
  model.script({ calls: [call("docs-fail", {}, "call_fail")] }, (body) => ({ text: `result: ${toolResults(body)["call_fail"]}` }));
  const res = await chat({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.choices[0].message.content, "result: the tool failed on purpose");
});

test("arguments that are not a JSON object yield an invalid_arguments error result without running the tool", async () => {
  const echoes = docs.callCount("echo");
  model.script({ calls: [call("docs-echo", "{not json", "call_bad")] }, (body) => ({ text: toolResults(body)["call_bad"] ?? "" }));
  const res = await chat({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(JSON.parse(res.body.choices[0].message.content).error.type, "invalid_arguments");
  assert.equal(docs.callCount("echo"), echoes);
});

test("an execution refused with a toolResult (the per-user credential payload) passes it to the model verbatim", async () => {
  const payload = JSON.stringify({ mcp_auth_required: { kind: "per_user_headers", submit_url: "http://gw/workspace/mcp-sessions/auth?flow=abc", message: "open the link" } });
  const original = app.runtime.execute;
  app.runtime.execute = async () => {
    throw Object.assign(new GatewayError("unauthenticated", "auth required", { type: "mcp_auth_required" }), { toolResult: payload });
  };
  try {
    model.script({ calls: [call("docs-echo", { text: "x" }, "call_auth")] }, (body) => ({ text: toolResults(body)["call_auth"] ?? "" }));
    const res = await chat({});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.choices[0].message.content, payload);
  } finally {
    app.runtime.execute = original;
  }
});

test("an execution refused without a toolResult becomes an {error: {type, message}} result", async () => {
  const original = app.runtime.execute;
  app.runtime.execute = async () => {
    throw new GatewayError("failed_precondition", 'MCP client "docs" refuses tool calls: it is disabled', { type: "mcp_client_unavailable" });
  };
  try {
    model.script({ calls: [call("docs-echo", { text: "x" }, "call_refused")] }, (body) => ({ text: toolResults(body)["call_refused"] ?? "" }));
    const res = await chat({});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(JSON.parse(res.body.choices[0].message.content), { error: { type: "mcp_client_unavailable", message: 'MCP client "docs" refuses tool calls: it is disabled' } });
  } finally {
    app.runtime.execute = original;
  }
});

test("a tool outside tools_to_execute is never offered nor executed, even in tools_to_auto_execute and called by the model", async () => {
  const sent = model.requests.length;
  model.script({ calls: [call("limited-add", { a: 1, b: 2 }, "call_limited")] });
  const res = await chat({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const offered = ((model.bodies().at(-1)?.["tools"] ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
  assert.ok(offered.includes("limited-echo"));
  assert.ok(!offered.includes("limited-add"));
  assert.equal(limited.callCount("add"), 0);
  assert.equal(model.requests.length - sent, 1);
  assert.equal(res.body.choices[0].finish_reason, "tool_calls");
  assert.equal(res.body.choices[0].message.tool_calls[0].function.name, "limited-add");
});

test("a request tool with the name of an MCP tool wins and the gateway does not run it", async () => {
  const echoes = docs.callCount("echo");
  const own = { type: "function", function: { name: "docs-echo", description: "the caller's own echo", parameters: { type: "object", properties: {} } } };
  model.script({ calls: [call("docs-echo", {}, "call_own")] });
  const res = await chat({ tools: [own] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const tools = (model.bodies().at(-1)?.["tools"] ?? []) as { function: { name: string; description: string } }[];
  assert.deepEqual(
    tools.filter((t) => t.function.name === "docs-echo").map((t) => t.function.description),
    ["the caller's own echo"],
  );
  assert.equal(docs.callCount("echo"), echoes);
  assert.equal(res.body.choices[0].message.tool_calls[0].id, "call_own");
});

test("a forced tool_choice becomes auto on the follow-up turn", async () => {
  model.script({ calls: [call("docs-echo", { text: "forced" }, "call_forced")] }, { text: "ok" });
  const forced = { type: "function", function: { name: "docs-echo" } };
  const res = await chat({ tool_choice: forced });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const [first, second] = model.bodies().slice(-2);
  assert.deepEqual(first?.["tool_choice"], forced);
  assert.equal(second?.["tool_choice"], "auto");
});

test("the response's usage sums every model call of the loop", async () => {
  model.script({ calls: [call("docs-echo", { text: "u" })], usage: { input: 10, output: 5 } }, { text: "final", usage: { input: 20, output: 7 } });
  const res = await chat({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.usage, { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 });
});

test("every model call of the loop counts in the inference metrics and every tool run in the MCP metric, under the caller's key", async () => {
  const scrape = async (): Promise<Sample[]> => parseExposition(await fetch(`${app.url}/metrics`).then((r) => r.text()));
  const before = await scrape();
  model.script({ calls: [call("docs-echo", { text: "m" })] }, { text: "final" });
  assert.equal((await chat({})).status, 200);
  const after = await scrape();
  const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
  const key = { virtual_key_id: "vk-agent", virtual_key_name: "agent" };
  assert.equal(delta("gw_upstream_requests_total", { ...key, method: "chat" }), 2);
  assert.equal(delta("gw_success_requests_total", { ...key, method: "chat" }), 2);
  assert.equal(delta("gw_input_tokens_total", { ...key, method: "chat" }), 20);
  assert.equal(delta("gw_mcp_client_operation_duration_seconds_count", { ...key, mcp_client: "docs", mcp_tool_name: "echo", error_type: "" }), 1);
});

test("the official openai SDK drives an agent-mode conversation end to end", async () => {
  model.script({ calls: [call("docs-add", { a: 2, b: 3 }, "call_add")] }, (body) => ({ text: `the sum is ${toolResults(body)["call_add"]}` }));
  const completion = await sdk(app, KEY).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "what is 2 + 3?" }] });
  assert.equal(completion.choices[0]?.message.content, "the sum is 5");
  assert.equal(completion.choices[0]?.finish_reason, "stop");
  assert.equal(completion.usage?.total_tokens, 30);
});
