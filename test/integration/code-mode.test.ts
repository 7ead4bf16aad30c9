/**
 * Code mode through the real app: code-mode clients' tools give way to the four meta-tools on /v1 and
 * /mcp; a scripted model lists and reads the generated declarations and runs code chaining two tool calls
 * in one step; binding levels lay the files out per server or per tool; the sandbox refuses escapes and
 * survives runaway code; per-user credentials apply inside code; agent mode runs code only when every tool
 * it calls is auto-executable.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { call, scriptedInference, startScriptedModel, toolResults, type ScriptedModel } from "../fixtures/scripted-model.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";
import { closeMcp, connectMcp, resultText, toolNames } from "../helpers/mcp-client.js";

const KEY = "sk-gw-code-mode";
const MODEL = "openai/gpt-4o-mini";
const PROVIDER_CONFIGS = [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }];
const META = ["executeToolCode", "getToolDocs", "listToolFiles", "readToolFile"];

let model: ScriptedModel;
/** Code-mode client `docs`: every tool auto-executed. */
let docs: McpFixture;
/** Code-mode client `manual`: no tool auto-executed. */
let manual: McpFixture;
/** Ordinary client `plain`: its tools are offered as they are. */
let plain: McpFixture;
/** Code-mode per_user_headers client `crm`. */
let crm: McpFixture;
let app: TestApp;
let open: Client[] = [];
const clientIds = new Map<string, string>();

async function createClient(body: Record<string, unknown>): Promise<void> {
  const res = await api(app, "POST", "/api/mcp/client", { connection_type: "http", tools_to_execute: ["*"], ...body });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  clientIds.set(String(body["name"]), res.body.client_id as string);
}

function chat(headers: Record<string, string> = {}) {
  return api(app, "POST", "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "go" }] }, { authorization: `Bearer ${KEY}`, ...headers });
}

/** The sorted names of the function tools the model received in its last request. */
function offeredNames(): string[] {
  return ((model.bodies().at(-1)?.["tools"] ?? []) as { function: { name: string } }[]).map((t) => t.function.name).sort();
}

/** Has the model run `code` through executeToolCode and answer with the result it got. */
async function runCode(code: string): Promise<{ status: number; text: string }> {
  model.script({ calls: [call("executeToolCode", { code }, "call_code")] }, (body) => ({ text: toolResults(body)["call_code"] ?? "" }));
  const res = await chat();
  return { status: res.status, text: String(res.body.choices?.[0]?.message?.content ?? JSON.stringify(res.body)) };
}

/** Runs `code` the way an application runs a pending executeToolCode call. */
function executeTool(code: string) {
  const body = { id: "call_code", type: "function", function: { name: "executeToolCode", arguments: JSON.stringify({ code }) } };
  return api(app, "POST", "/v1/mcp/tool/execute", body, { authorization: `Bearer ${KEY}` });
}

async function setBindingLevel(level: string): Promise<void> {
  const res = await api(app, "PUT", "/api/settings/mcp/tool-manager-config", { code_mode_binding_level: level });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

before(async () => {
  model = await startScriptedModel();
  docs = await startMcpFixture();
  manual = await startMcpFixture();
  plain = await startMcpFixture();
  crm = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["admin-sample"] } });
  const clients = ["docs", "manual", "plain", "crm"].map((name) => ({ mcp_client_name: name, tools_to_execute: ["*"] }));
  app = await startApp({ inference: scriptedInference(model, [{ id: "vk-code", name: "code", value: KEY, provider_configs: PROVIDER_CONFIGS, mcp_configs: clients }]) });
  await createClient({ name: "docs", connection_string: docs.httpUrl, tools_to_auto_execute: ["*"], is_code_mode_client: true });
  await createClient({ name: "manual", connection_string: manual.httpUrl, tools_to_auto_execute: [], is_code_mode_client: true });
  await createClient({ name: "plain", connection_string: plain.httpUrl, tools_to_auto_execute: [] });
  await createClient({
    name: "crm",
    connection_string: crm.httpUrl,
    auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"],
    user_headers: { "x-user-token": "admin-sample" },
    tools_to_auto_execute: ["*"],
    is_code_mode_client: true,
  });
});

after(async () => {
  await app?.stop();
  await Promise.all([model?.close(), docs?.close(), manual?.close(), plain?.close(), crm?.close()]);
});

beforeEach(() => {
  model.script();
  model.otherwise = { text: "done" };
});

afterEach(async () => {
  await Promise.all(open.map((c) => closeMcp(c).catch(() => undefined)));
  open = [];
});

test("a code-mode client's tools are replaced by the four meta-tools, offered once, next to ordinary clients' tools", async () => {
  assert.equal((await chat()).status, 200);
  assert.deepEqual(offeredNames(), [...META, "plain-add", "plain-echo", "plain-slow"].sort());
});

test("turning is_code_mode_client on for a client by update moves its tools behind the meta-tools", async () => {
  const path = `/api/mcp/client/${clientIds.get("plain") ?? ""}`;
  assert.equal((await api(app, "PUT", path, { is_code_mode_client: true })).status, 200);
  try {
    assert.equal((await chat()).status, 200);
      assert.deepEqual(offeredNames(), META);
  } finally {
    assert.equal((await api(app, "PUT", path, { is_code_mode_client: false })).status, 200);
  }
});

test("the model lists the tool files, reads one and runs code calling two tools in one step", async () => {
  const scrape = async () => parseExposition(await fetch(`${app.url}/metrics`).then((r) => r.text()));
  const before = await scrape();
  const adds = docs.callCount("add");
  const echoes = docs.callCount("echo");
  const code = 'const sum = await docs.add({ a: 2, b: 3 });\nconst said = await docs.echo({ text: "hi" });\n({ sum, said })';
  model.script(
    { calls: [call("listToolFiles", {}, "call_list")] },
    { calls: [call("readToolFile", { fileName: "servers/docs.d.ts" }, "call_read")] },
    { calls: [call("executeToolCode", { code }, "call_code")] },
    (body) => ({ text: JSON.stringify(toolResults(body)) }),
  );
  const res = await chat({ "x-gw-mcp-include-clients": "docs" });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const results = JSON.parse(res.body.choices[0].message.content) as Record<string, string>;
  assert.deepEqual(results["call_list"]?.split("\n"), ["servers/docs.d.ts"]);
  assert.match(results["call_read"] ?? "", /declare const docs: \{/);
  assert.match(results["call_read"] ?? "", /Adds two numbers/);
  assert.match(results["call_read"] ?? "", /add\(input: DocsAddInput\): Promise<unknown>;/);
  assert.match(results["call_read"] ?? "", /export interface DocsAddInput \{[^}]*a: number/);
  assert.deepEqual(JSON.parse(results["call_code"] ?? ""), { sum: 5, said: "hi" });
  assert.equal(docs.callCount("add"), adds + 1);
  assert.equal(docs.callCount("echo"), echoes + 1);
  const after = await scrape();
  const delta = (labels: Record<string, string>) =>
    total(after, "gw_mcp_client_operation_duration_seconds_count", labels) - total(before, "gw_mcp_client_operation_duration_seconds_count", labels);
  assert.equal(delta({ mcp_client: "docs", mcp_tool_name: "add", virtual_key_name: "code" }), 1);
  assert.equal(delta({ mcp_client: "docs", mcp_tool_name: "echo", virtual_key_name: "code" }), 1);
  assert.equal(delta({}), 2, "the meta-tools themselves are not measured");
});

test("binding level tool lays the declarations out one file per tool", async () => {
  await setBindingLevel("tool");
  try {
    model.script(
      { calls: [call("listToolFiles", {}, "call_list"), call("readToolFile", { fileName: "servers/docs/add.d.ts", startLine: 1, endLine: 400 }, "call_read")] },
      (body) => ({ text: JSON.stringify(toolResults(body)) }),
    );
    const res = await chat({ "x-gw-mcp-include-clients": "docs,manual" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const results = JSON.parse(res.body.choices[0].message.content) as Record<string, string>;
    const files = (results["call_list"] ?? "").split("\n").sort();
    assert.deepEqual(files, ["servers/docs/add.d.ts", "servers/docs/echo.d.ts", "servers/docs/slow.d.ts", "servers/manual/add.d.ts", "servers/manual/echo.d.ts", "servers/manual/slow.d.ts"]);
    assert.match(results["call_read"] ?? "", /add\(input: DocsAddInput\)/);
    assert.doesNotMatch(results["call_read"] ?? "", /echo\(/);
  } finally {
    await setBindingLevel("server");
  }
});

test("binding level server lays the declarations out one file per client, with only the tools the caller sees", async () => {
  model.script({ calls: [call("listToolFiles", {}, "call_list"), call("getToolDocs", { server: "docs", tool: "echo" }, "call_docs")] }, (body) => ({
    text: JSON.stringify(toolResults(body)),
  }));
  const res = await chat({ "x-gw-mcp-include-tools": "docs-echo,manual-*" });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const results = JSON.parse(res.body.choices[0].message.content) as Record<string, string>;
  assert.deepEqual((results["call_list"] ?? "").split("\n").sort(), ["servers/docs.d.ts", "servers/manual.d.ts"]);
  assert.match(results["call_docs"] ?? "", /Echoes its text/);
  assert.match(results["call_docs"] ?? "", /text: string/);
});

for (const [what, code, message] of [
  ["require", 'require("fs")', /ReferenceError: 'require' is not defined \(line 1\)/],
  ["import()", 'await import("fs")', /could not load module 'fs'/],
  ["process", "process.exit(1)", /ReferenceError: 'process' is not defined \(line 1\)/],
  ["fetch", 'await fetch("http://127.0.0.1:1/")', /ReferenceError: 'fetch' is not defined/],
  ["an infinite loop", "let n = 0;\nwhile (true) { n++; }", /ran past the time limit of 1000 ms/],
  ["a 1 GB allocation", "const big = new ArrayBuffer(1024 * 1024 * 1024);\nbig.byteLength", /ran out of memory/],
] as const) {
  test(`code using ${what} ends with a clear error and the gateway keeps serving`, async () => {
    const res = await api(app, "PUT", "/api/settings/mcp/tool-manager-config", { tool_execution_timeout: "1s" });
    assert.equal(res.status, 200);
    try {
      const run = await runCode(code);
      assert.equal(run.status, 200);
      assert.match(run.text, /^Error: /);
      assert.match(run.text, message);
      const next = await runCode("await docs.add({ a: 1, b: 1 })");
      assert.equal(next.text, "2");
    } finally {
      await api(app, "PUT", "/api/settings/mcp/tool-manager-config", { tool_execution_timeout: "30s" });
    }
  });
}

test("a failing tool call inside the code comes back with the line of the failure", async () => {
  const run = await runCode('const a = 1;\nawait docs.add({ a: "one" });');
  assert.match(run.text, /^Error: ToolError: docs\.add failed: .*\(line 2\)$/s);
});

test("a code-mode call to a per-user client without a credential returns the mcp_auth_required payload", async () => {
  const run = await runCode("await crm.echo({ text: 'hi' })");
  const payload = JSON.parse(run.text) as { mcp_auth_required?: { kind?: string; submit_url?: string } };
  assert.equal(payload.mcp_auth_required?.kind, "headers");
  assert.match(payload.mcp_auth_required?.submit_url ?? "", /^http/);
  assert.equal(crm.callCount("echo"), 0);
});

test("agent mode returns code calling a tool that is not auto-executable as a pending call, without running it", async () => {
  const adds = manual.callCount("add");
  model.script({ calls: [call("executeToolCode", { code: "await manual.add({ a: 1, b: 2 })" }, "call_code")] });
  const res = await chat();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const calls = res.body.choices[0].message.tool_calls as { id: string; function: { name: string } }[];
  assert.deepEqual(calls.map((c) => [c.id, c.function.name]), [["call_code", "executeToolCode"]]);
  assert.equal(model.bodies().length > 0, true);
  assert.equal(manual.callCount("add"), adds);
});

test("the application runs a pending executeToolCode with POST /v1/mcp/tool/execute", async () => {
  const adds = manual.callCount("add");
  const res = await executeTool("await manual.add({ a: 1, b: 2 })");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body, { role: "tool", tool_call_id: "call_code", content: "3" });
  assert.equal(manual.callCount("add"), adds + 1);
});

test("POST /v1/mcp/tool/execute answers a code-mode call without a per-user credential with the mcp_auth_required 401", async () => {
  const res = await executeTool("await crm.echo({ text: 'x' })");
  assert.equal(res.status, 401, JSON.stringify(res.body));
  assert.equal(res.body.mcp_auth_required?.kind, "headers");
});

test("agent mode does not run code that reaches a client's tools dynamically", async () => {
  const adds = docs.callCount("add");
  model.script({ calls: [call("executeToolCode", { code: 'const name = "add";\nawait docs[name]({ a: 1, b: 2 })' }, "call_code")] });
  const res = await chat();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.choices[0].message.tool_calls?.[0]?.function?.name, "executeToolCode");
  assert.equal(docs.callCount("add"), adds);
});

test("a request's own tool named executeToolCode stays the caller's to run", async () => {
  const adds = docs.callCount("add");
  const own = { type: "function", function: { name: "executeToolCode", description: "The application's own", parameters: { type: "object", properties: {} } } };
  model.script({ calls: [call("executeToolCode", { code: "await docs.add({ a: 1, b: 2 })" }, "call_own")] });
  const res = await api(app, "POST", "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "go" }], tools: [own] }, { authorization: `Bearer ${KEY}` });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.choices[0].message.tool_calls?.[0]?.id, "call_own");
  assert.equal(docs.callCount("add"), adds);
});

test("code that reaches a tool without naming it runs, but that call is refused", async () => {
  const adds = docs.callCount("add");
  const run = await runCode('const client = globalThis["do" + "cs"];\nawait client.add({ a: 1, b: 2 })');
  assert.match(run.text, /^Error: ToolError: docs\.add is not called by name in the code, so it was not approved to run \(line 2\)$/);
  assert.equal(docs.callCount("add"), adds);
});

test("/mcp lists the meta-tools instead of a code-mode client's tools, and runs code through them", async () => {
  const client = await connectMcp(app, "streamable", { authorization: `Bearer ${KEY}` });
  open.push(client);
  assert.deepEqual(await toolNames(client), [...META, "plain-add", "plain-echo", "plain-slow"].sort());
  const result = await client.callTool({ name: "executeToolCode", arguments: { code: "const r = await manual.add({ a: 20, b: 22 });\nlet result = r * 2;" } });
  assert.equal(result.isError, false);
  assert.equal(resultText(result), "84");
  const hidden = await client.callTool({ name: "docs-add", arguments: { a: 1, b: 2 } });
  assert.equal(hidden.isError, true);
});
