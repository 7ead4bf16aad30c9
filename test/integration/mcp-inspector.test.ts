/**
 * A third-party MCP client against /mcp: the MCP Inspector's CLI (pinned in devDependencies, run with
 * `npx --no-install`) lists the gateway's tools and calls one. It sends no custom headers, so it calls as a
 * caller without a virtual key.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const run = promisify(execFile);

let docs: McpFixture;
let app: TestApp;

before(async () => {
  docs = await startMcpFixture();
  app = await startApp();
  const created = await api(app, "POST", "/api/mcp/client", { name: "docs", connection_type: "http", connection_string: docs.httpUrl, tools_to_execute: ["echo", "add"] });
  assert.equal(created.status, 200, JSON.stringify(created.body));
});

after(async () => {
  await app?.stop();
  await docs?.close();
});

/** Runs the inspector's CLI against the gateway and parses the JSON it prints. */
async function inspector(...args: string[]): Promise<any /* the CLI's JSON output; tests assert on it */> {
  const { stdout } = await run("npx", ["--no-install", "@modelcontextprotocol/inspector", "--cli", `${app.url}/mcp`, ...args], { timeout: 60_000 });
  return JSON.parse(stdout);
}

test("the MCP Inspector CLI lists the gateway's tools", async () => {
  const listed = await inspector("--method", "tools/list");
  assert.deepEqual((listed.tools as { name: string }[]).map((t) => t.name).sort(), ["docs-add", "docs-echo"]);
});

test("the MCP Inspector CLI calls a tool through the gateway", async () => {
  const called = await inspector("--method", "tools/call", "--tool-name", "docs-echo", "--tool-arg", "text=from the inspector");
  assert.equal(called.isError, false);
  assert.deepEqual(called.content, [{ type: "text", text: "from the inspector" }]);
});
