/**
 * Config reload: SIGHUP makes a running gateway process re-read its config file and apply what changed,
 * as a restart would; a file that cannot be applied is logged and changes nothing.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { appOptionsFromConfig } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { logLineCount, servingUrl, spawnMain, waitForLog, type GatewayProcess } from "../helpers/gateway-process.js";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";

/** A config file with one provider key serving `models` and one MCP client executing `tools`. */
function configFile(models: string[], tools: string[], extra: Record<string, unknown> = {}) {
  return {
    providers: { openai: { keys: [{ id: "k1", name: "main", value: "sk-test", models }] } },
    mcp: { client_configs: [{ name: "docs", connection_type: "http", connection_string: "http://127.0.0.1:9/mcp", tools_to_execute: tools }] },
    ...extra,
  };
}

async function providerModels(url: string): Promise<unknown> {
  const res = await api({ url }, "GET", "/api/v1/providers/openai");
  return res.body.provider.keys[0].models;
}

async function clientTools(url: string): Promise<unknown> {
  const res = await api({ url }, "GET", "/api/mcp/clients");
  return res.body.clients.find((c: { name: string }) => c.name === "docs").tools_to_execute;
}

async function servedModels(url: string): Promise<string[]> {
  const res = await api({ url }, "GET", "/v1/models");
  return res.body.data.map((m: { id: string }) => m.id);
}

describe("SIGHUP", { skip: testDatabaseUrl ? "runs on the embedded database only" : false }, () => {
  let dir: string;
  let config: string;
  let gw: GatewayProcess;
  let url: string;

  /** Sends SIGHUP and returns the first log line of its outcome. */
  async function hangUp(): Promise<Record<string, unknown>> {
    const from = logLineCount(gw);
    gw.child.kill("SIGHUP");
    await waitForLog(gw, "SIGHUP: re-reading the config file", from);
    return Promise.any([waitForLog(gw, "config file reloaded", from), waitForLog(gw, "config file not applied", from)]);
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-reload-"));
    await seedEmbeddedDatabase(join(dir, "data"));
    config = join(dir, "gw.json");
    await writeFile(config, JSON.stringify(configFile(["reload-model-a"], ["search"])));
    gw = spawnMain(["--config", config, "--port", "0", "--data-dir", join(dir, "data")]);
    url = await servingUrl(gw);
  });
  after(async () => {
    gw.child.kill("SIGTERM");
    await gw.exited;
    await rm(dir, { recursive: true, force: true });
  });

  test("a changed provider and MCP client in the file are applied to the store and the running gateway", async () => {
    await writeFile(config, JSON.stringify(configFile(["reload-model-b"], ["search", "fetch"])));
    const outcome = await hangUp();
    assert.equal(outcome["msg"], "config file reloaded", gw.output());
    assert.deepEqual(outcome["changed"], { mcp_clients: ["docs"], providers: ["openai"] });
    assert.deepEqual(await providerModels(url), ["reload-model-b"]);
    assert.deepEqual(await clientTools(url), ["search", "fetch"]);
    assert.ok((await servedModels(url)).includes("openai/reload-model-b"), "the /v1 catalog serves the new model");
  });

  test("a bad file is logged with its problem and leaves the running configuration as it was", async () => {
    const bad = configFile(["reload-model-c"], ["everything"]);
    bad.mcp.client_configs.push({ name: "bad-name", connection_type: "http", connection_string: "http://127.0.0.1:9/mcp", tools_to_execute: [] });
    await writeFile(config, JSON.stringify(bad));
    const outcome = await hangUp();
    assert.match(String(outcome["msg"]), /^config file not applied, the running configuration stays: .*mcp\.client_configs\[1\]\.name/s);
    assert.deepEqual(await providerModels(url), ["reload-model-b"]);
    assert.deepEqual(await clientTools(url), ["search", "fetch"]);
    assert.ok(!(await servedModels(url)).includes("openai/reload-model-c"));
  });
});

describe("App.reload", () => {
  let app: TestApp;
  const fileOptions = (json: unknown) => appOptionsFromConfig(parseConfig(json, {}));
  before(async () => {
    app = await startApp(fileOptions(configFile(["reload-model-a"], ["search"])));
  });
  after(() => app.stop());

  test("an entry that breaks a rule at seeding time rejects the reload and leaves earlier sections unwritten", async () => {
    const taken = await api(app, "POST", "/api/governance/virtual-keys", { id: "vk-api", name: "api", value: "sk-gw-taken", provider_configs: [] });
    assert.equal(taken.status, 200, JSON.stringify(taken.body));
    const clash = configFile(["reload-model-c"], ["search"], { governance: { virtual_keys: [{ id: "vk-file", name: "file", value: "sk-gw-taken" }] } });
    await assert.rejects(app.reload(fileOptions(clash)), /governance\.virtual_keys\[0\]\.value/);
    assert.deepEqual(await providerModels(app.url), ["reload-model-a"], "the provider written before the clash was rolled back");
    assert.ok(!(await servedModels(app.url)).includes("openai/reload-model-c"));
  });
});
