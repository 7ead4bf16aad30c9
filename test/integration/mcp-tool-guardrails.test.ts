/**
 * The tool_input and tool_output guardrail stages on every path an MCP tool call takes through the real
 * app: POST /v1/mcp/tool/execute, agent mode (the official `openai` SDK against a scripted model), code
 * mode, the aggregated /mcp endpoint and /mcp/<client> (the MCP SDK's client), against a real MCP server
 * that records the arguments it receives. Each key carries one guardrail, so each test shows one action.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startGuardedToolsServer, type GuardedToolsServer } from "../fixtures/guarded-tools-server.js";
import { call, scriptedInference, startScriptedModel, toolResults, type ScriptedModel } from "../fixtures/scripted-model.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";
import { sdk } from "../helpers/inference.js";
import { closeMcp, connectMcp } from "../helpers/mcp-client.js";
import { connectRelay, remoteClient, waitHealthy } from "../helpers/relay-client.js";

/** A Luhn-valid test card number. */
const CARD = "4111 1111 1111 1111";
const PROVIDER_CONFIGS = [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }];
const MCP_CONFIGS = [
  { mcp_client_name: "crm", tools_to_execute: ["*"] },
  { mcp_client_name: "vault", tools_to_execute: ["*"] },
];
const KEYS = {
  inBlock: "sk-gw-tool-in-block",
  inRedact: "sk-gw-tool-in-redact",
  outBlock: "sk-gw-tool-out-block",
  outRedact: "sk-gw-tool-out-redact",
  warn: "sk-gw-tool-warn",
  plain: "sk-gw-tool-plain",
} as const;

let upstream: GuardedToolsServer;
let model: ScriptedModel;
let app: TestApp;
let open: Client[] = [];

function key(id: string, value: string) {
  return { id, name: id, value, provider_configs: PROVIDER_CONFIGS, mcp_configs: MCP_CONFIGS };
}

before(async () => {
  upstream = await startGuardedToolsServer();
  model = await startScriptedModel();
  app = await startApp({
    inference: scriptedInference(model, [
      key("vk-in-block", KEYS.inBlock),
      key("vk-in-redact", KEYS.inRedact),
      key("vk-out-block", KEYS.outBlock),
      key("vk-out-redact", KEYS.outRedact),
      key("vk-warn", KEYS.warn),
      key("vk-plain", KEYS.plain),
    ]),
    mcpClients: [
      { ...remoteClient("crm", "http", upstream.httpUrl, ["*"]), toolsToAutoExecute: ["*"] },
      { ...remoteClient("vault", "http", upstream.httpUrl, ["*"]), toolsToAutoExecute: ["*"], isCodeModeClient: true },
    ],
    guardrails: [
      { id: "gr-in-block", name: "no-cards-in", stages: ["tool_input"], scope: "virtual_key", scope_id: "vk-in-block", check: { type: "pii", pii: { entities: ["credit_card"] } }, action: "block" },
      { id: "gr-in-redact", name: "mask-email-in", stages: ["tool_input"], scope: "virtual_key", scope_id: "vk-in-redact", check: { type: "pii", pii: { entities: ["email"] } }, action: "redact" },
      { id: "gr-out-block", name: "no-cards-out", stages: ["tool_output"], scope: "virtual_key", scope_id: "vk-out-block", check: { type: "pii", pii: { entities: ["credit_card"] } }, action: "block" },
      { id: "gr-out-redact", name: "mask-email-out", stages: ["tool_output"], scope: "virtual_key", scope_id: "vk-out-redact", check: { type: "pii", pii: { entities: ["email"] } }, action: "redact" },
      { id: "gr-warn", name: "fruit-watch", stages: ["tool_input"], scope: "virtual_key", scope_id: "vk-warn", check: { type: "keywords", keywords: { words: ["banana"] } }, action: "warn" },
      {
        id: "gr-crm-notes",
        name: "crm-notes-topics",
        stages: ["tool_input"],
        scope: "mcp_client",
        scope_id: "crm",
        when: 'mcp_client == "crm" && tool == "notes"',
        check: { type: "keywords", keywords: { words: ["payroll"] } },
        action: "block",
      },
    ],
  });
  await waitHealthy(app, ["crm", "vault"]);
});

after(async () => {
  await app?.stop();
  await Promise.all([upstream?.close(), model?.close()]);
});

beforeEach(() => {
  model.script();
  model.otherwise = { text: "done" };
  upstream.setReply("nothing to report");
});

afterEach(async () => {
  await Promise.all(open.map((client) => closeMcp(client).catch(() => undefined)));
  open = [];
});

/** POST /v1/mcp/tool/execute as `apiKey`. */
async function execute(apiKey: string, name: string, args: Record<string, unknown>) {
  const res = await fetch(`${app.url}/v1/mcp/tool/execute`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ id: "call_1", type: "function", function: { name, arguments: JSON.stringify(args) } }),
  });
  const body = (await res.json()) as { content?: string };
  return { status: res.status, content: body.content ?? JSON.stringify(body), header: res.headers.get("x-gw-guardrails") };
}

/** The error object of a 446 payload carried as a tool result's text. */
function blockedPayload(text: string): Record<string, unknown> {
  const parsed = JSON.parse(text) as { error?: Record<string, unknown> };
  assert.ok(parsed.error, `not a guardrail payload: ${text}`);
  return parsed.error;
}

/** The upstream's calls of `tool` since `from`. */
function callsSince(from: number, tool: string) {
  return upstream.calls.slice(from).filter((c) => c.name === tool);
}

async function mcpAs(apiKey: string): Promise<Client> {
  const client = await connectMcp(app, "streamable", { authorization: `Bearer ${apiKey}` });
  open.push(client);
  return client;
}

async function relayAs(apiKey: string): Promise<Client> {
  const client = await connectRelay(app, "crm", { headers: { authorization: `Bearer ${apiKey}` } });
  open.push(client);
  return client;
}

function textsOf(result: unknown): string[] {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.filter((block) => block.type === "text").map((block) => block.text ?? "");
}

describe("POST /v1/mcp/tool/execute", () => {
  test("a tool_input block answers the 446 payload and never calls the upstream", async () => {
    const from = upstream.calls.length;
    const res = await execute(KEYS.inBlock, "crm-echo", { text: `charge ${CARD}` });
    assert.equal(res.status, 200);
    const error = blockedPayload(res.content);
    assert.equal(error["type"], "guardrail_blocked");
    assert.equal(error["guardrail_id"], "gr-in-block");
    assert.equal(error["guardrail_name"], "no-cards-in");
    assert.equal(error["stage"], "tool_input");
    assert.doesNotMatch(res.content, /4111/);
    assert.equal(res.header, "no-cards-in=block");
    assert.deepEqual(callsSince(from, "echo"), []);
  });

  test("a tool_input redaction sends the upstream the redacted arguments, nested values included", async () => {
    const from = upstream.calls.length;
    const res = await execute(KEYS.inRedact, "crm-echo", { text: "write to ana@example.com", cc: ["bob@example.com", { bcc: "eve@example.com" }], count: 2 });
    assert.equal(res.status, 200);
    assert.deepEqual(callsSince(from, "echo").map((c) => c.arguments), [
      { text: "write to [REDACTED:email]", cc: ["[REDACTED:email]", { bcc: "[REDACTED:email]" }], count: 2 },
    ]);
    assert.equal(res.header, "mask-email-in=redact");
  });

  test("a tool_output redaction gives the caller the redacted result", async () => {
    upstream.setReply("reach ana@example.com for access");
    const res = await execute(KEYS.outRedact, "crm-reply", {});
    assert.equal(res.content, "reach [REDACTED:email] for access");
    assert.equal(res.header, "mask-email-out=redact");
  });

  test("a tool_output block replaces the result with the 446 payload", async () => {
    upstream.setReply(`the card on file is ${CARD}`);
    const res = await execute(KEYS.outBlock, "crm-reply", {});
    const error = blockedPayload(res.content);
    assert.equal(error["guardrail_name"], "no-cards-out");
    assert.equal(error["stage"], "tool_output");
    assert.doesNotMatch(res.content, /4111/);
  });

  test("a warning lets the call through unchanged and is named in x-gw-guardrails", async () => {
    const from = upstream.calls.length;
    const res = await execute(KEYS.warn, "crm-echo", { text: "one banana please" });
    assert.equal(res.content, "one banana please");
    assert.equal(res.header, "fruit-watch=warn");
    assert.deepEqual(callsSince(from, "echo").map((c) => c.arguments), [{ text: "one banana please" }]);
  });

  test("a call no guardrail covers carries no x-gw-guardrails header", async () => {
    const res = await execute(KEYS.plain, "crm-echo", { text: `charge ${CARD}` });
    assert.equal(res.content, `charge ${CARD}`);
    assert.equal(res.header, null);
  });

  test("a guardrail scoped to an MCP client covers every key's calls of it, and its when condition reads the tool", async () => {
    const from = upstream.calls.length;
    const notes = await execute(KEYS.plain, "crm-notes", { topic: "payroll" });
    assert.equal(blockedPayload(notes.content)["guardrail_name"], "crm-notes-topics");
    const echo = await execute(KEYS.plain, "crm-echo", { text: "payroll" });
    assert.equal(echo.content, "payroll");
    assert.deepEqual(upstream.calls.slice(from).map((c) => c.name), ["echo"]);
  });

  test("tool stage checks are counted in gw_guardrail_checks_total under their stage", async () => {
    const blocks = async () => total(parseExposition(await (await fetch(`${app.url}/metrics`)).text()), "gw_guardrail_checks_total", { guardrail: "no-cards-in", stage: "tool_input", result: "block" });
    const before = await blocks();
    await execute(KEYS.inBlock, "crm-echo", { text: CARD });
    assert.equal(await blocks(), before + 1);
  });
});

describe("agent mode", () => {
  test("a tool_input block reaches the model as the tool's result and the upstream is not called", async () => {
    const from = upstream.calls.length;
    model.script({ calls: [call("crm-echo", { text: `pay with ${CARD}` })] }, (body) => ({ text: toolResults(body)["call_crm_echo"] ?? "" }));
    const answer = await sdk(app, KEYS.inBlock).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "go" }] });
    const error = blockedPayload(answer.choices[0]?.message.content ?? "");
    assert.equal(error["stage"], "tool_input");
    assert.equal(error["guardrail_name"], "no-cards-in");
    assert.deepEqual(callsSince(from, "echo"), []);
  });

  test("the model receives the tool result as tool_output redacted it", async () => {
    upstream.setReply("ask ana@example.com");
    model.script({ calls: [call("crm-reply")] }, (body) => ({ text: toolResults(body)["call_crm_reply"] ?? "" }));
    const answer = await sdk(app, KEYS.outRedact).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "go" }] });
    assert.equal(answer.choices[0]?.message.content, "ask [REDACTED:email]");
    assert.doesNotMatch(JSON.stringify(model.bodies()), /ana@example\.com/);
  });
});

describe("code mode", () => {
  test("a tool call made by executeToolCode is blocked at tool_input before it reaches the upstream", async () => {
    const from = upstream.calls.length;
    const res = await execute(KEYS.inBlock, "executeToolCode", { code: `return await vault.echo({ text: "${CARD}" })` });
    assert.match(res.content, /guardrail_blocked/);
    assert.match(res.content, /no-cards-in/);
    assert.deepEqual(callsSince(from, "echo"), []);
  });
});

describe("/mcp", () => {
  test("a tool_input block is an isError result carrying the 446 payload", async () => {
    const from = upstream.calls.length;
    const client = await mcpAs(KEYS.inBlock);
    const result = await client.callTool({ name: "crm-echo", arguments: { text: CARD } });
    assert.equal(result.isError, true);
    assert.equal(blockedPayload(textsOf(result)[0] ?? "")["stage"], "tool_input");
    assert.deepEqual(callsSince(from, "echo"), []);
  });

  test("a tool_output redaction rewrites the result's text blocks and its structuredContent", async () => {
    upstream.setReply("mail ana@example.com");
    const client = await mcpAs(KEYS.outRedact);
    const result = await client.callTool({ name: "crm-reply", arguments: {} });
    assert.deepEqual(textsOf(result), ["mail [REDACTED:email]"]);
    assert.doesNotMatch(JSON.stringify(result), /ana@example\.com/);
  });
});

describe("/mcp/<client>", () => {
  test("a tool_input redaction reaches the upstream redacted", async () => {
    const from = upstream.calls.length;
    const client = await relayAs(KEYS.inRedact);
    const result = await client.callTool({ name: "echo", arguments: { text: "cc ana@example.com" } });
    assert.deepEqual(textsOf(result), ["cc [REDACTED:email]"]);
    assert.deepEqual(callsSince(from, "echo").map((c) => c.arguments), [{ text: "cc [REDACTED:email]" }]);
  });

  test("a tool_output block replaces the relayed result with the 446 payload", async () => {
    upstream.setReply(`card ${CARD}`);
    const client = await relayAs(KEYS.outBlock);
    const result = await client.callTool({ name: "reply", arguments: {} });
    assert.equal(result.isError, true);
    assert.equal(blockedPayload(textsOf(result)[0] ?? "")["guardrail_name"], "no-cards-out");
    assert.doesNotMatch(JSON.stringify(result), /4111/);
  });

  test("a tool_output redaction rewrites the relayed structuredContent", async () => {
    upstream.setReply("mail ana@example.com");
    const client = await relayAs(KEYS.outRedact);
    const result = await client.callTool({ name: "reply", arguments: {} });
    assert.deepEqual(result.structuredContent, { note: "mail [REDACTED:email]" });
  });
});
