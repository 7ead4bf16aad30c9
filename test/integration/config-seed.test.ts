/** The config file seeds the store at boot; the store is the source of truth afterwards. */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { appOptionsFromConfig } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

function fileOptions(json: unknown, env: NodeJS.ProcessEnv = {}) {
  return appOptionsFromConfig(parseConfig(json, env));
}

function clientsFile(clients: unknown[], extra: Record<string, unknown> = {}) {
  return { mcp: { client_configs: clients }, ...extra };
}

const perUser = {
  name: "crm",
  connection_type: "http",
  connection_string: "http://127.0.0.1:9/mcp",
  auth_type: "per_user_headers",
  per_user_header_keys: ["x-user-token", "x-team"],
  headers: { "x-static": "env.STATIC_VALUE" },
  tools_to_execute: ["*"],
  tool_sync_interval: "15m",
};

const stdio = { name: "local", connection_type: "stdio", stdio_config: { command: "node", args: ["x.js"], envs: [] } };

describe("config file seeding", () => {
  let app: TestApp | undefined;
  after(() => app?.stop());

  async function listed(a: TestApp) {
    const res = await api(a, "GET", "/api/mcp/clients");
    return new Map<string, any /* REST JSON client */>(res.body.clients.map((c: { name: string }) => [c.name, c]));
  }

  test("declared clients are created at boot; per_user_headers ones wait in pending_verification", async () => {
    app = await startApp(fileOptions(clientsFile([perUser, stdio]), { STATIC_VALUE: "from-env" }));
    const clients = await listed(app);
    const crm = clients.get("crm");
    assert.equal(crm.state, "pending_verification");
    assert.equal(crm.tool_sync_interval, 15);
    assert.deepEqual(crm.headers, { "x-static": { value: "<redacted>" } });
    assert.equal(clients.get("local").connection_type, "stdio", "a stdio client from the file needs no admin session");
    const { McpClientRecord } = await import("../../src/store/index.js");
    const rec = await app.store.fork().findOneOrFail(McpClientRecord, { name: "crm" });
    assert.equal(rec.headers["x-static"], "from-env");
  });

  test("an API edit survives a restart while the file is unchanged", async () => {
    assert.ok(app);
    const clients = await listed(app);
    const res = await api(app, "PUT", `/api/mcp/client/${clients.get("crm").client_id}`, { tools_to_execute: ["search"] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await app.stop({ keepData: true });
    app = await startApp({ ...app.restartOptions, ...fileOptions(clientsFile([perUser, stdio]), { STATIC_VALUE: "from-env" }) });
    assert.deepEqual((await listed(app)).get("crm").tools_to_execute, ["search"]);
  });

  test("a changed file entry applies its mutable fields and ignores immutable edits with a warning", async () => {
    assert.ok(app);
    const edited = { ...perUser, connection_string: "http://127.0.0.1:10/elsewhere", tools_to_execute: ["lookup"] };
    await app.stop({ keepData: true });
    app = await startApp({ ...app.restartOptions, ...fileOptions(clientsFile([edited, stdio]), { STATIC_VALUE: "from-env" }) });
    const crm = (await listed(app)).get("crm");
    assert.equal(crm.connection_string, "http://127.0.0.1:9/mcp");
    assert.deepEqual(crm.tools_to_execute, ["lookup"]);
    const warning = app.logLines.map((l) => JSON.parse(l)).find((l) => l.level === 40 && l.field === "connection_string");
    assert.ok(warning, "boot warning for the immutable edit");
    assert.match(warning.msg, /immutable/);
  });

  test("a file that empties per_user_header_keys keeps the stored keys with a warning", async () => {
    assert.ok(app);
    const emptied = { ...perUser, per_user_header_keys: [], tools_to_execute: ["lookup"] };
    await app.stop({ keepData: true });
    app = await startApp({ ...app.restartOptions, ...fileOptions(clientsFile([emptied, stdio]), { STATIC_VALUE: "from-env" }) });
    const crm = (await listed(app)).get("crm");
    assert.deepEqual(crm.per_user_header_keys, ["x-user-token", "x-team"]);
    assert.ok(app.logLines.some((l) => /empties per_user_header_keys/.test(l)));
  });

  test("a client that breaks a domain rule stops boot with the path of the field", async () => {
    const bad = { name: "sse_client", connection_type: "sse", connection_string: "http://127.0.0.1:9/sse", needs_session_stickiness: false };
    await assert.rejects(startApp(fileOptions(clientsFile([bad]))), /mcp\.client_configs\[0\]\.needs_session_stickiness/);
  });

  test("settings from the file seed the tool manager and client settings", async () => {
    const a = await startApp(fileOptions({ client: { prometheus_labels: ["team"], mcp_relay_request_timeout: "2m" }, mcp: { tool_manager_config: { max_agent_depth: 7, tool_execution_timeout: "45s" } } }));
    try {
      const tm = await api(a, "GET", "/api/settings/mcp/tool-manager-config");
      assert.deepEqual(tm.body.config, { max_agent_depth: 7, tool_execution_timeout: "45s", code_mode_binding_level: "server" });
      const cfg = await api(a, "GET", "/config");
      assert.deepEqual(cfg.body.config.client.prometheus_labels, ["team"]);
      assert.equal(cfg.body.config.client.mcp_relay_request_timeout, "2m");
    } finally {
      await a.stop();
    }
  });
});
