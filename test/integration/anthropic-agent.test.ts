/**
 * Agent mode on POST /anthropic/v1/messages through the real app and the official `@anthropic-ai/sdk`: the
 * caller's MCP tools are offered as Anthropic tools, auto-executed ones run in the gateway with their results
 * fed back, a mixed turn hands back the summary and the pending tool_use blocks, and a stream is refused.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type { McpFixture } from "../fixtures/mcp-server.js";
import { call, toolResults, type ScriptedModel } from "../fixtures/scripted-model.js";
import { startAgentApp, type AgentApp } from "../helpers/agent-app.js";
import type { TestApp } from "../helpers/app.js";
import { rejection } from "../helpers/inference.js";

const KEY = "sk-gw-agent";
const MODEL = "openai/gpt-4o-mini";

let setup: AgentApp;
let model: ScriptedModel;
let docs: McpFixture;
let app: TestApp;

function client(): Anthropic {
  return new Anthropic({ apiKey: KEY, baseURL: `${app.url}/anthropic`, maxRetries: 0 });
}

before(async () => {
  setup = await startAgentApp(KEY);
  ({ app, model, docs } = setup);
});

after(async () => {
  await setup?.close();
});

beforeEach(() => {
  model.script();
  model.otherwise = { text: "done" };
});

test("offers the MCP tools as Anthropic tools, runs an auto-executed one and returns the model's final answer", async () => {
  const echoes = docs.callCount("echo");
  model.script({ calls: [call("docs-echo", { text: "hello tools" }, "call_1")] }, (body) => ({ text: `the tool said ${toolResults(body)["call_1"]}` }));
  const message = await client().messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "go" }] });
  assert.deepEqual(message.content, [{ type: "text", text: "the tool said hello tools" }]);
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(docs.callCount("echo"), echoes + 1);
  const first = model.bodies().at(-2) as { tools: { function: { name: string } }[] };
  assert.ok(first.tools.some((tool) => tool.function.name === "docs-echo"));
  // Usage is summed over both model calls (10 in, 5 out each).
  assert.equal(message.usage.input_tokens, 20);
  assert.equal(message.usage.output_tokens, 10);
});

test("a mixed turn answers with the summary and only the pending tool_use blocks", async () => {
  model.script({ calls: [call("docs-echo", { text: "ran" }, "call_auto"), call("manual-echo", { text: "later" }, "call_manual")] });
  const message = await client().messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "go" }] });
  assert.equal(message.stop_reason, "end_turn");
  const [summary, pending, ...rest] = message.content;
  assert.equal(rest.length, 0);
  assert.ok(summary?.type === "text");
  assert.deepEqual(JSON.parse(summary.text), { call_auto: { tool: "docs-echo", content: "ran", is_error: false } });
  assert.ok(pending?.type === "tool_use");
  assert.equal(pending.id, "call_manual");
  assert.equal(pending.name, "manual-echo");
  assert.deepEqual(pending.input, { text: "later" });
});

test("refuses a stream while auto-executed tools are offered, in Anthropic's envelope", async () => {
  const err = await rejection(client().messages.create({ model: MODEL, max_tokens: 100, stream: true, messages: [{ role: "user", content: "go" }] }), Anthropic.APIError);
  assert.equal(err.status, 400);
  assert.equal((err.error as { error?: { type?: string } }).error?.type, "invalid_request_error");
  assert.match(err.message, /POST \/anthropic\/v1\/messages/);
});
