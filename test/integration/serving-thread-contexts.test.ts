/**
 * What the serving thread does in the background while it serves (the usage counters' writes, the
 * provider's model list), a first start that applies the config file, a restart whose file did not change,
 * an admin signing in and changing what the admin API manages, and a user's MCP credential gathered through
 * the auth-required flow, enter no AsyncLocalStorage: on Node 20
 * the first store entered turns promise hooks on for the whole process, a cost every request pays from then
 * on. Entries are counted by wrapping the public `run` and `enterWith` for this test only.
 */
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { inferenceOptionsFromFile, type InferenceOptions } from "../../src/services/inference/config.js";
import { UsageRecord } from "../../src/store/index.js";
import { startMcpFixture } from "../fixtures/mcp-server.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

/** Short, so the counters are written while the test counts. */
const FLUSH_MS = 20;

/** Where each entry came from, while counting. */
const entries: string[] = [];
let counting = false;
const original = { run: AsyncLocalStorage.prototype.run, enterWith: AsyncLocalStorage.prototype.enterWith };

function countEntries(): void {
  // Wrapped in place for this test only: the entries are what the assertion is about.
  AsyncLocalStorage.prototype.run = function run(this: AsyncLocalStorage<unknown>, ...args: Parameters<AsyncLocalStorage<unknown>["run"]>) {
    if (counting) entries.push(new Error("entered").stack ?? "");
    return original.run.apply(this, args);
  } as AsyncLocalStorage<unknown>["run"];
  AsyncLocalStorage.prototype.enterWith = function enterWith(this: AsyncLocalStorage<unknown>, store: unknown) {
    if (counting) entries.push(new Error("entered").stack ?? "");
    original.enterWith.call(this, store);
  };
}

let upstream: MockUpstream;
let app: TestApp;
let inference: InferenceOptions;

before(async () => {
  countEntries();
  upstream = await startMockOpenAi();
  const providers = { openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: upstream.url } } };
  const virtualKey = {
    id: "vk-quiet",
    name: "quiet",
    value: "sk-gw-quiet",
    provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1, budgets: [{ max_limit: 1000, reset_duration: "1h" }], rate_limit: { token_max_limit: 1_000_000, token_reset_duration: "1h" } }],
  };
  const rules = [{ id: "rule-quiet", name: "quiet rule", cel_expression: `headers["x-never"] == "1"`, targets: [{ provider: "openai" }] }];
  const groups = { business_unit: [], customer: [], team: [{ id: "team-quiet", name: "quiet team" }] };
  inference = { ...inferenceOptionsFromFile(providers, [{ ...virtualKey, team_id: "team-quiet" }], rules, groups), usageFlushIntervalMs: FLUSH_MS };
  app = await startApp({ inference });
});

after(async () => {
  counting = false;
  AsyncLocalStorage.prototype.run = original.run;
  AsyncLocalStorage.prototype.enterWith = original.enterWith;
  await app?.stop();
  await upstream?.close();
});

/** Sends a few requests through the virtual key, then waits until their usage is in the store. */
async function serveAndFlush(target: TestApp): Promise<void> {
  // Read before the requests: the flusher may write their usage before a read after them would run.
  const before = (await target.store.fork().findOne(UsageRecord, { virtualKeyId: "vk-quiet", provider: "openai" }))?.tokens?.used ?? 0;
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${target.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-gw-quiet" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "count me" }] }),
    });
    assert.equal(res.status, 200, await res.text());
  }
  // Bounded: until the counters these requests changed are in the store.
  let written = false;
  for (const until = Date.now() + 5_000; Date.now() < until && !written; await sleep(FLUSH_MS)) {
    const stored = await target.store.fork().findOne(UsageRecord, { virtualKeyId: "vk-quiet", provider: "openai" });
    written = (stored?.tokens?.used ?? 0) > before;
  }
  assert.ok(written, "the usage counters were never written");
}

test("serving requests and writing their usage enters no AsyncLocalStorage", async () => {
  counting = true;
  await serveAndFlush(app);
  counting = false;
  assert.deepEqual(entries, []);
});

test("a first start that applies its config file enters no AsyncLocalStorage", async () => {
  entries.length = 0;
  counting = true;
  const fresh = await startApp({ inference });
  counting = false;
  try {
    assert.deepEqual(entries, []);
    // What it wrote serves: the provider, the key and its team as the file declares them.
    await serveAndFlush(fresh);
  } finally {
    await fresh.stop();
  }
});

test("a restart whose config file did not change enters no AsyncLocalStorage", async () => {
  await app.stop({ keepData: true });
  entries.length = 0;
  counting = true;
  app = await startApp(app.restartOptions);
  await serveAndFlush(app);
  counting = false;
  assert.deepEqual(entries, []);
});

test("an admin signing in and writing through the admin API enters no AsyncLocalStorage", async () => {
  const admin = await startApp({ inference, auth: { enabled: true, username: "admin", password: "quiet-pw", sessionTtlMs: 3_600_000 } });
  const mcp = await startMcpFixture();
  try {
    entries.length = 0;
    counting = true;
    const login = await api(admin, "POST", "/api/session/login", { username: "admin", password: "quiet-pw" });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const auth = { authorization: `Bearer ${login.body.token}` };
    /** One admin call that must succeed. */
    const call = async (method: string, path: string, body?: unknown): Promise<any /* JSON of any shape */> => {
      const res = await api(admin, method, path, body, auth);
      assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(res.body)}`);
      return res.body;
    };
    await call("POST", "/api/v1/providers", { name: "acme", keys: [{ id: "acme-1", name: "acme-1", value: "sk-acme" }], network_config: { base_url: upstream.url } });
    await call("PUT", "/api/v1/providers/acme", { keys: [{ id: "acme-1", name: "acme-1", value: "sk-acme-2" }], network_config: { base_url: upstream.url } });
    await call("POST", "/api/governance/teams", { id: "team-admin", name: "admin team" });
    await call("PUT", "/api/governance/teams/team-admin", { name: "admin team, renamed" });
    await call("POST", "/api/governance/virtual-keys", { id: "vk-admin", name: "admin key", team_id: "team-admin", provider_configs: [{ provider: "acme", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] });
    await call("PUT", "/api/governance/virtual-keys/vk-admin", { name: "admin key, renamed" });
    await call("POST", "/api/governance/routing-rules", { id: "rr-admin", name: "admin rule", cel_expression: `headers["x-never"] == "1"`, targets: [{ provider: "acme" }] });
    await call("PUT", "/api/governance/routing-rules/rr-admin", { enabled: false });
    await call("POST", "/api/guardrails", { id: "gr-admin", name: "admin guardrail", stages: ["input"], check: { type: "secrets" }, action: "block" });
    await call("PUT", "/api/guardrails/gr-admin", { action: "warn" });
    await call("PUT", "/api/settings/mcp/tool-manager-config", { max_agent_depth: 7 });
    const client = await call("POST", "/api/mcp/client", { name: "quiet", connection_type: "http", connection_string: mcp.httpUrl, tools_to_execute: ["*"] });
    await call("PUT", `/api/mcp/client/${client.client_id}`, { tools_to_execute: ["echo"] });
    await call("POST", "/api/mcp/virtual-servers", { name: "quiet_server", members: [{ client: "quiet", tools: ["echo"] }] });
    await call("PUT", "/api/mcp/virtual-servers/quiet_server", { description: "renamed" });
    await call("DELETE", "/api/mcp/virtual-servers/quiet_server");
    await call("DELETE", `/api/mcp/client/${client.client_id}`);
    await call("DELETE", "/api/guardrails/gr-admin");
    await call("DELETE", "/api/governance/routing-rules/rr-admin");
    await call("DELETE", "/api/governance/virtual-keys/vk-admin");
    await call("DELETE", "/api/governance/teams/team-admin");
    await call("DELETE", "/api/v1/providers/acme");
    counting = false;
    assert.deepEqual(entries, []);
    // What was written was stored: the key is gone, so it no longer authenticates.
    assert.equal((await api(admin, "GET", "/api/governance/virtual-keys/vk-admin", undefined, auth)).status, 404);
  } finally {
    counting = false;
    await admin.stop();
    await mcp.close();
  }
});

test("a per-user credential gathered through the auth-required flow enters no AsyncLocalStorage", async () => {
  const mcp = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["user-secret"] } });
  const perUser = await startApp({ inference });
  try {
    entries.length = 0;
    counting = true;
    const created = await api(perUser, "POST", "/api/mcp/client", {
      name: "crm", connection_type: "http", connection_string: mcp.httpUrl, auth_type: "per_user_headers",
      per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "user-secret" }, tools_to_execute: ["*"],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const key = await api(perUser, "POST", "/api/governance/virtual-keys", { id: "vk-user", name: "user", value: "sk-gw-user", mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] });
    assert.equal(key.status, 200, JSON.stringify(key.body));
    const execute = () => api(perUser, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: JSON.stringify({ text: "hi" }) } }, { "x-gw-vk": "sk-gw-user" });
    const required = await execute();
    assert.equal(required.status, 401, JSON.stringify(required.body));
    const flow = new URL(required.body.mcp_auth_required.submit_url).searchParams.get("flow");
    const submitted = await api(perUser, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": "user-secret" } });
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    assert.equal((await execute()).status, 200);
    counting = false;
    assert.deepEqual(entries, []);
  } finally {
    counting = false;
    await perUser.stop();
    await mcp.close();
  }
});
