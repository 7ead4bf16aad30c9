import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";

describe("settings API", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp();
  });
  after(() => app.stop());

  test("the tool manager config has the documented defaults", async () => {
    const res = await api(app, "GET", "/api/settings/mcp/tool-manager-config");
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.config, { max_agent_depth: 10, tool_execution_timeout: "30s", code_mode_binding_level: "server" });
  });

  test("PUT changes only the fields sent and the change survives a restart", async () => {
    const res = await api(app, "PUT", "/api/settings/mcp/tool-manager-config", { max_agent_depth: 25 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.config, { max_agent_depth: 25, tool_execution_timeout: "30s", code_mode_binding_level: "server" });
    assert.equal(app.settings.toolManager.maxAgentDepth, 25);
    await app.stop({ keepData: true });
    app = await startApp(app.restartOptions);
    const after = await api(app, "GET", "/api/settings/mcp/tool-manager-config");
    assert.equal(after.body.config.max_agent_depth, 25);
  });

  test("PUT accepts code_mode_binding_level tool and server", async () => {
    for (const level of ["tool", "server"]) {
      const res = await api(app, "PUT", "/api/settings/mcp/tool-manager-config", { code_mode_binding_level: level });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.config.code_mode_binding_level, level);
      assert.equal(app.settings.toolManager.codeModeBindingLevel, level);
    }
  });

  for (const [body, field] of [
    [{ max_agent_depth: 0 }, "max_agent_depth"],
    [{ max_agent_depth: 51 }, "max_agent_depth"],
    [{ tool_execution_timeout: "soon" }, "tool_execution_timeout"],
    [{ tool_execution_timeout: "-5s" }, "tool_execution_timeout"],
    [{ code_mode_binding_level: "module" }, "code_mode_binding_level"],
  ] as const) {
    test(`rejects ${JSON.stringify(body)} naming ${field}`, async () => {
      const res = await api(app, "PUT", "/api/settings/mcp/tool-manager-config", body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, new RegExp(`^${field}:`));
    });
  }

  test("PATCH /config sets prometheus_labels at run time", async () => {
    const res = await api(app, "PATCH", "/config", { client: { prometheus_labels: ["team", "env"] } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.config.client.prometheus_labels, ["team", "env"]);
    assert.deepEqual(app.settings.client.prometheusLabels, ["team", "env"]);
    assert.deepEqual(res.body.config.client.allowed_headers, ["*"], "other settings unchanged");
  });

  test("PATCH /config accepts an initial_pool_size of 0", async () => {
    assert.equal((await api(app, "PATCH", "/config", { client: { initial_pool_size: 4 } })).status, 200);
    const res = await api(app, "PATCH", "/config", { client: { initial_pool_size: 0 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.config.client.initial_pool_size, 0);
    assert.equal(app.settings.client.initialPoolSize, 0);
  });

  test("PATCH /config rejects a negative initial_pool_size", async () => {
    const res = await api(app, "PATCH", "/config", { client: { initial_pool_size: -1 } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^client\.initial_pool_size: must be a whole number >= 0/);
  });

  test("PATCH /config rejects a reserved label name", async () => {
    const res = await api(app, "PATCH", "/config", { client: { prometheus_labels: ["path"] } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^client\.prometheus_labels\[0\]:.*reserved/);
  });

  test("PATCH /config rejects an invalid label name", async () => {
    const res = await api(app, "PATCH", "/config", { client: { prometheus_labels: ["team-name"] } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^client\.prometheus_labels\[0\]:/);
  });

  test("client.mcp_relay_request_timeout defaults to 10m, and a PATCH applies at once and survives a restart", async () => {
    assert.equal((await api(app, "GET", "/config")).body.config.client.mcp_relay_request_timeout, "10m");
    const res = await api(app, "PATCH", "/config", { client: { mcp_relay_request_timeout: "90s" } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.config.client.mcp_relay_request_timeout, "1m30s");
    assert.equal(app.settings.client.mcpRelayRequestTimeoutMs, 90_000);
    await app.stop({ keepData: true });
    app = await startApp(app.restartOptions);
    assert.equal((await api(app, "GET", "/config")).body.config.client.mcp_relay_request_timeout, "1m30s");
    assert.equal(app.settings.client.mcpRelayRequestTimeoutMs, 90_000);
  });

  for (const [value, problem] of [
    ["999ms", "must be at least 1s"],
    ["0", "must be at least 1s"],
    ["-5m", "must be at least 1s"],
    ["25h", "must be at most 24h"],
    ["soon", 'invalid duration "soon"'],
    ["", 'invalid duration ""'],
    // A number is refused by the REST bridge's reader, which names the field under the request body's `config`.
    [600, "expected a string, got 600"],
  ] as const) {
    test(`PATCH /config rejects client.mcp_relay_request_timeout ${JSON.stringify(value)}, naming the field`, async () => {
      const before = app.settings.client.mcpRelayRequestTimeoutMs;
      const res = await api(app, "PATCH", "/config", { client: { mcp_relay_request_timeout: value } });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      const message = res.body.error.message as string;
      assert.match(message, /^(config\.)?client\.mcp_relay_request_timeout: /);
      assert.ok(message.includes(problem), message);
      assert.equal(app.settings.client.mcpRelayRequestTimeoutMs, before, "the setting is unchanged");
    });
  }

  test("PATCH /config with nothing to change is a 400", async () => {
    const res = await api(app, "PATCH", "/config", {});
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /update_mask/);
  });
});
