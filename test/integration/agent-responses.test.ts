/**
 * Agent mode on POST /v1/responses through the real app and the official openai SDK: function_call items
 * the gateway may run are executed and fed back as function_call_output items, a mixed turn returns the
 * summary message with the pending calls, and usage sums the loop.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import type { McpFixture } from "../fixtures/mcp-server.js";
import { call, toolResults, type ScriptedModel } from "../fixtures/scripted-model.js";
import { startAgentApp, type AgentApp } from "../helpers/agent-app.js";
import { api, type TestApp } from "../helpers/app.js";
import { sdk } from "../helpers/inference.js";

const KEY = "sk-gw-agent";
const MODEL = "openai/gpt-4o-mini";

let setup: AgentApp;
let model: ScriptedModel;
let manual: McpFixture;
let app: TestApp;

before(async () => {
  setup = await startAgentApp(KEY);
  ({ app, model, manual } = setup);
});

after(async () => {
  await setup?.close();
});

beforeEach(() => {
  model.script();
  model.otherwise = { text: "done" };
});

test("runs a tool round on /v1/responses and returns the final answer with usage summed", async () => {
  model.script(
    { calls: [call("docs-add", { a: 2, b: 3 }, "call_add")], usage: { input: 10, output: 5 } },
    (body) => ({ text: `the sum is ${toolResults(body)["call_add"]}`, usage: { input: 20, output: 7 } }),
  );
  const response = await sdk(app, KEY).responses.create({ model: MODEL, input: "what is 2 + 3?" });
  assert.equal(response.output_text, "the sum is 5");
  assert.equal(response.usage?.input_tokens, 30);
  assert.equal(response.usage?.output_tokens, 12);
  assert.equal(response.usage?.total_tokens, 42);
  const input = model.bodies().at(-1)?.["input"] as Record<string, unknown>[];
  assert.deepEqual(input[0], { role: "user", content: "what is 2 + 3?" });
  assert.deepEqual(
    input.slice(1).map((item) => [item["type"], item["call_id"]]),
    [
      ["function_call", "call_add"],
      ["function_call_output", "call_add"],
    ],
  );
  assert.equal(input[2]?.["output"], "5");
});

test("a mixed turn on /v1/responses returns the summary message and only the pending function calls", async () => {
  const adds = manual.callCount("add");
  model.script({ calls: [call("docs-echo", { text: "ran" }, "call_auto"), call("manual-add", { a: 1, b: 2 }, "call_manual")] });
  const res = await api(app, "POST", "/v1/responses", { model: MODEL, input: "go" }, { authorization: `Bearer ${KEY}` });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const output = res.body.output as Record<string, any>[]; // wire JSON, asserted below
  assert.deepEqual(
    output.map((item) => item["type"]),
    ["message", "function_call"],
  );
  assert.deepEqual(JSON.parse(output[0]?.["content"][0].text), { call_auto: { tool: "docs-echo", content: "ran", is_error: false } });
  assert.equal(output[1]?.["call_id"], "call_manual");
  assert.equal(manual.callCount("add"), adds);
});
