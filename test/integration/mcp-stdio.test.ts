/**
 * stdio clients: a real MCP server spawned by the gateway, its environment, no orphans after shutdown, and a
 * delete that does not wait on the calls in flight.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { stdioClient as stdio } from "../helpers/mcp-specs.js";
import { childrenMatching } from "../helpers/processes.js";

const EVERYTHING = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url));
const STDIO_FIXTURE = fileURLToPath(new URL("../fixtures/stdio-server.ts", import.meta.url));


async function clientNamed(app: TestApp, name: string) {
  const res = await api(app, "GET", `/api/mcp/clients?search=${name}`);
  return (res.body.clients as { name: string; state: string; tools: { name: string }[]; last_failure?: { stage: string; message: string } }[]).find((c) => c.name === name);
}

describe("stdio clients", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({
      env: { ...process.env, GW_STDIO_VISIBLE: "shown", GW_STDIO_HIDDEN: "secret" },
      mcpClients: [
        stdio("everything", process.execPath, [EVERYTHING, "stdio"]),
        stdio("fixture", process.execPath, ["--import", "tsx", STDIO_FIXTURE], ["GW_STDIO_VISIBLE"]),
        stdio("needs_env", process.execPath, ["--import", "tsx", STDIO_FIXTURE], ["GW_STDIO_NOT_SET"]),
      ],
    });
  });
  after(() => app.stop());

  async function waitSettled(name: string) {
    for (let i = 0; i < 200; i++) {
      const c = await clientNamed(app, name);
      if (c && c.state !== "error") return c;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`${name} never left the error state`);
  }

  test("a real stdio MCP server connects, lists its tools and runs one", async () => {
    let client = await waitSettled("everything");
    // The listing reads the stored tool list, written as the client turns healthy: poll briefly for it.
    for (let i = 0; i < 100 && client.tools.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      client = await waitSettled("everything");
    }
    assert.equal(client.state, "healthy");
    assert.ok(client.tools.some((t) => t.name === "echo"), JSON.stringify(client.tools.map((t) => t.name)));
    const res = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "everything-echo", arguments: JSON.stringify({ message: "hi there" }) } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.content, /hi there/);
  });

  test("a stdio child sees the variables named in envs and not the others", async () => {
    await waitSettled("fixture");
    const visible = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c2", type: "function", function: { name: "fixture-env", arguments: JSON.stringify({ name: "GW_STDIO_VISIBLE" }) } });
    assert.equal(visible.body.content, "shown");
    const hidden = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c3", type: "function", function: { name: "fixture-env", arguments: JSON.stringify({ name: "GW_STDIO_HIDDEN" }) } });
    assert.equal(hidden.body.content, "<unset>");
  });

  test("a variable named in envs but not set is a connect failure naming it", async () => {
    const client = await waitSettled("needs_env");
    assert.equal(client.state, "unstable");
    assert.equal(client.last_failure?.stage, "connect");
    assert.match(client.last_failure?.message ?? "", /GW_STDIO_NOT_SET/);
  });

  test("shutdown leaves no child process behind", async () => {
    assert.ok((await childrenMatching(EVERYTHING)).length > 0, "the stdio server runs while the gateway does");
    await app.stop({ keepData: true });
    assert.deepEqual(await childrenMatching(EVERYTHING), []);
    assert.deepEqual(await childrenMatching(STDIO_FIXTURE), []);
    app = await startApp({ ...app.restartOptions, mcpClients: [] });
  });
});

describe("deleting a stdio client", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({ mcpClients: [stdio("blocker", process.execPath, ["--import", "tsx", STDIO_FIXTURE, "--blocking"])] });
  });
  after(() => app.stop());

  test("ends its calls in flight with an error result instead of waiting for them", async () => {
    let id: string | undefined;
    for (let i = 0; i < 200 && id === undefined; i++) {
      const c = (await clientNamed(app, "blocker")) as { client_id?: string; state: string } | undefined;
      if (c?.state === "healthy") id = c.client_id;
      else await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(id, "the client never became healthy");
    const marker = join(await mkdtemp(join(tmpdir(), "gw-block-")), "called");
    const call = api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "blocker-block", arguments: JSON.stringify({ marker }) } });
    // Bounded: until the call is at the upstream.
    for (let i = 0; i < 400 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(existsSync(marker), "the call never reached the upstream");
    const deleted = await api(app, "DELETE", `/api/mcp/client/${id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    const res = await call;
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.content, /^Error: tool blocker-block failed: .*Connection closed/);
  });
});
