/**
 * Tool injection for agent mode through the real app: the MCP tools a caller may use are added to chat
 * completions and Responses requests in each API's function-tool format; the x-gw-mcp-include-* headers
 * and the virtual key's mcp_configs narrow them; stream: true is refused only when an injected tool is
 * auto-executable.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { call, scriptedInference, startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model.js";
import { createMcpClient } from "../helpers/agent-app.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const KEY = "sk-gw-agent";
/** A key whose mcp_configs grant only docs' echo. */
const ECHO_KEY = "sk-gw-echo-only";
/** A key whose mcp_configs is []. */
const NONE_KEY = "sk-gw-no-tools";
/** A key without mcp_configs. */
const UNSET_KEY = "sk-gw-unset-tools";
const MODEL = "openai/gpt-4o-mini";
const PROVIDER_CONFIGS = [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }];

let model: ScriptedModel;
/** Client `docs`: every tool auto-executed. */
let docs: McpFixture;
/** Client `manual`: every tool offered, none auto-executed. */
let manual: McpFixture;
let app: TestApp;

const clientIds = new Map<string, string>();

/** Runs `body` with a client's fields changed, then puts them back. */
async function withClient(name: string, fields: Record<string, unknown>, restore: Record<string, unknown>, body: () => Promise<void>): Promise<void> {
  const path = `/api/mcp/client/${clientIds.get(name) ?? ""}`;
  assert.equal((await api(app, "PUT", path, fields)).status, 200);
  try {
    await body();
  } finally {
    assert.equal((await api(app, "PUT", path, restore)).status, 200);
  }
}

function chat(body: Record<string, unknown>, headers: Record<string, string> = {}, key: string | null = KEY) {
  return api(app, "POST", "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "go" }], ...body }, { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...headers });
}

/** Names of the function tools the model received in its last chat request. */
function offeredChatTools(): string[] {
  return ((model.bodies().at(-1)?.["tools"] ?? []) as { function: { name: string } }[]).map((t) => t.function.name).sort();
}

const DOCS_TOOLS = ["docs-add", "docs-echo", "docs-slow"];
const MANUAL_TOOLS = ["manual-add", "manual-echo", "manual-slow"];

before(async () => {
  model = await startScriptedModel();
  docs = await startMcpFixture();
  manual = await startMcpFixture();
  app = await startApp({
    inference: scriptedInference(model, [
      {
        id: "vk-agent",
        name: "agent",
        value: KEY,
        provider_configs: PROVIDER_CONFIGS,
        mcp_configs: [
          { mcp_client_name: "docs", tools_to_execute: ["*"] },
          { mcp_client_name: "manual", tools_to_execute: ["*"] },
        ],
      },
      { id: "vk-echo", name: "echo-only", value: ECHO_KEY, provider_configs: PROVIDER_CONFIGS, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo"] }] },
      { id: "vk-none", name: "no-tools", value: NONE_KEY, provider_configs: PROVIDER_CONFIGS, mcp_configs: [] },
      { id: "vk-unset", name: "unset-tools", value: UNSET_KEY, provider_configs: PROVIDER_CONFIGS },
    ]),
  });
  clientIds.set("docs", await createMcpClient(app, "docs", docs, ["*"]));
  clientIds.set("manual", await createMcpClient(app, "manual", manual, []));
});

after(async () => {
  await app?.stop();
  await Promise.all([model?.close(), docs?.close(), manual?.close()]);
});

beforeEach(() => {
  model.script();
  model.otherwise = { text: "done" };
});

test("injects MCP tools into a chat request as function tools with their input schemas, after the request's own tools", async () => {
  const own = { type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: {} } } };
  const res = await chat({ tools: [own] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const tools = model.bodies().at(-1)?.["tools"] as Record<string, any>[]; // wire JSON, asserted below
  assert.deepEqual(tools[0], own);
  const add = tools.find((t) => t["function"]?.name === "docs-add");
  assert.deepEqual(Object.keys(add ?? {}).sort(), ["function", "type"]);
  assert.equal(add?.["type"], "function");
  assert.equal(add?.["function"].description, "Adds two numbers");
  assert.deepEqual(Object.keys(add?.["function"].parameters.properties).sort(), ["a", "b"]);
});

test("injects MCP tools into a Responses request as {type, name, description, parameters} function tools", async () => {
  const res = await api(app, "POST", "/v1/responses", { model: MODEL, input: "go" }, { authorization: `Bearer ${KEY}` });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const tools = model.bodies().at(-1)?.["tools"] as Record<string, any>[]; // wire JSON, asserted below
  const echo = tools.find((t) => t["name"] === "docs-echo");
  assert.equal(echo?.["type"], "function");
  assert.equal(echo?.["description"], "Echoes its text");
  assert.deepEqual(Object.keys(echo?.["parameters"].properties), ["text"]);
  assert.equal(echo?.["strict"], false);
});

test("offers every tool of every client without a virtual key", async () => {
  assert.equal((await chat({}, {}, null)).status, 200);
  assert.deepEqual(offeredChatTools(), [...DOCS_TOOLS, ...MANUAL_TOOLS]);
});

test("a virtual key's mcp_configs narrow the offered tools", async () => {
  assert.equal((await chat({}, {}, ECHO_KEY)).status, 200);
  assert.deepEqual(offeredChatTools(), ["docs-echo"]);
});

test("a virtual key whose mcp_configs is [] is offered no tool", async () => {
  assert.equal((await chat({}, {}, NONE_KEY)).status, 200);
  assert.equal(model.bodies().at(-1)?.["tools"], undefined);
});

test("a virtual key without mcp_configs is offered every tool, as a request without a key is", async () => {
  assert.equal((await chat({}, {}, UNSET_KEY)).status, 200);
  assert.deepEqual(offeredChatTools(), [...DOCS_TOOLS, ...MANUAL_TOOLS]);
});

test("a virtual key created through the API without mcp_configs is offered every tool, and one created with [] none", async () => {
  const unset = await api(app, "POST", "/api/governance/virtual-keys", { name: "api-unset", provider_configs: PROVIDER_CONFIGS });
  const empty = await api(app, "POST", "/api/governance/virtual-keys", { name: "api-empty", provider_configs: PROVIDER_CONFIGS, mcp_configs: [] });
  assert.equal(unset.status, 200, JSON.stringify(unset.body));
  assert.equal(empty.status, 200, JSON.stringify(empty.body));
  assert.equal((await chat({}, {}, unset.body.virtual_key.value as string)).status, 200);
  assert.deepEqual(offeredChatTools(), [...DOCS_TOOLS, ...MANUAL_TOOLS]);
  assert.equal((await chat({}, {}, empty.body.virtual_key.value as string)).status, 200);
  assert.equal(model.bodies().at(-1)?.["tools"], undefined);
});

test("a client with allow_on_all_virtual_keys is offered to keys whose mcp_configs do not name it", async () => {
  await withClient("manual", { allow_on_all_virtual_keys: true }, { allow_on_all_virtual_keys: false }, async () => {
    assert.equal((await chat({}, {}, ECHO_KEY)).status, 200);
    assert.deepEqual(offeredChatTools(), ["docs-echo", ...MANUAL_TOOLS]);
    assert.equal((await chat({}, {}, NONE_KEY)).status, 200);
    assert.deepEqual(offeredChatTools(), MANUAL_TOOLS);
  });
});

test("a key's mcp_configs and the include headers narrow together", async () => {
  assert.equal((await chat({}, { "x-gw-mcp-include-clients": "docs,manual" }, ECHO_KEY)).status, 200);
  assert.deepEqual(offeredChatTools(), ["docs-echo"]);
});

test("x-gw-mcp-include-tools takes <client>-* for every tool of a client", async () => {
  assert.equal((await chat({}, { "x-gw-mcp-include-tools": "manual-*,docs-add" })).status, 200);
  assert.deepEqual(offeredChatTools(), ["docs-add", ...MANUAL_TOOLS]);
});

test("an empty include header offers no tool", async () => {
  assert.equal((await chat({}, { "x-gw-mcp-include-clients": "" })).status, 200);
  assert.equal(model.bodies().at(-1)?.["tools"], undefined);
});

test("with client.mcp_disable_auto_tool_inject, only a request that sends an include header gets MCP tools", async () => {
  assert.equal((await api(app, "PATCH", "/config", { client: { mcp_disable_auto_tool_inject: true } })).status, 200);
  try {
    assert.equal((await chat({})).status, 200);
    assert.equal(model.bodies().at(-1)?.["tools"], undefined);
    assert.equal((await chat({}, { "x-gw-mcp-include-clients": "manual" })).status, 200);
    assert.deepEqual(offeredChatTools(), MANUAL_TOOLS);
  } finally {
    assert.equal((await api(app, "PATCH", "/config", { client: { mcp_disable_auto_tool_inject: false } })).status, 200);
  }
});

test("the gateway does not run a tool the virtual key's mcp_configs do not grant, even when the model calls it", async () => {
  const adds = docs.callCount("add");
  model.script({ calls: [call("docs-add", { a: 1, b: 1 }, "call_add")] });
  const res = await chat({}, {}, ECHO_KEY);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(docs.callCount("add"), adds);
  assert.equal(res.body.choices[0].message.tool_calls[0].function.name, "docs-add");
});

test("x-gw-mcp-include-clients narrows the offered tools to the named clients", async () => {
  assert.equal((await chat({}, { "x-gw-mcp-include-clients": "manual" })).status, 200);
  assert.deepEqual(offeredChatTools(), MANUAL_TOOLS);
});

test("x-gw-mcp-include-tools narrows the offered tools to the named <client>-<tool> names", async () => {
  assert.equal((await chat({}, { "x-gw-mcp-include-tools": "docs-echo, manual-add" })).status, 200);
  assert.deepEqual(offeredChatTools(), ["docs-echo", "manual-add"]);
});

test("an include header of * offers every tool", async () => {
  assert.equal((await chat({}, { "x-gw-mcp-include-clients": "*", "x-gw-mcp-include-tools": "*" })).status, 200);
  assert.deepEqual(offeredChatTools(), [...DOCS_TOOLS, ...MANUAL_TOOLS]);
});

for (const header of ["x-gw-mcp-include-clients", "x-gw-mcp-include-tools"]) {
  test(`refuses * mixed with names in ${header} with a 400 naming the header`, async () => {
    const sent = model.requests.length;
    const res = await chat({}, { [header]: "*,docs" });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error.param, header);
    assert.match(res.body.error.message, new RegExp(`^${header}: `));
    assert.equal(model.requests.length, sent);
  });

  test(`refuses a name listed twice in ${header} with a 400 naming the header`, async () => {
    const res = await chat({}, { [header]: "docs-echo,docs-echo" });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error.param, header);
    assert.match(res.body.error.message, /listed twice/);
  });
}

test("refuses stream: true on chat completions when an offered tool is auto-executable, naming the non-streaming endpoints", async () => {
  const sent = model.requests.length;
  const res = await chat({ stream: true });
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.error.type, "caller_agent_mode_streaming_unsupported");
  assert.match(res.body.error.message, /without stream to POST \/v1\/chat\/completions or POST \/v1\/responses/);
  assert.equal(model.requests.length, sent);
});

test("refuses stream: true on responses when an offered tool is auto-executable", async () => {
  const res = await api(app, "POST", "/v1/responses", { model: MODEL, input: "go", stream: true }, { authorization: `Bearer ${KEY}` });
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.error.type, "caller_agent_mode_streaming_unsupported");
});

test("streams as usual, with the tools injected, when no offered tool is auto-executable", async () => {
  model.script({ text: "streamed answer" });
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, "x-gw-mcp-include-clients": "manual" },
    body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: "user", content: "go" }] }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
  const text = await res.text();
  assert.match(text, /streamed answer/);
  assert.match(text, /data: \[DONE\]/);
  assert.deepEqual(offeredChatTools(), MANUAL_TOOLS);
});
