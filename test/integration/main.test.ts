/** The entry point as `npm run dev` runs it (`node --import tsx src/main.ts`): flags, the config file, SIGTERM. */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";
import { testDatabaseUrl } from "../helpers/app.js";
import { servingUrl, spawnMain } from "../helpers/gateway-process.js";

describe("src/main.ts", { skip: testDatabaseUrl ? "runs on the embedded database only" : false }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-main-"));
    await seedEmbeddedDatabase(join(dir, "data"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("starts from a config file, answers /health, and stops cleanly on SIGTERM", async () => {
    const config = join(dir, "gw.json");
    await writeFile(config, JSON.stringify({
      auth_config: { is_enabled: true, admin_username: "admin", admin_password: "env.TEST_ADMIN_PW" },
      mcp: { client_configs: [{ name: "local", connection_type: "stdio", stdio_config: { command: "node" } }] },
    }));
    const gw = spawnMain(["--config", config, "--port", "0", "--data-dir", join(dir, "data")], { TEST_ADMIN_PW: "pw" });
    const { child, output, exited } = gw;
    try {
      const url = await servingUrl(gw);
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 200);
      const login = await fetch(`${url}/api/session/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ username: "admin", password: "pw" }) });
      const { token } = (await login.json()) as { token: string };
      const clients = await fetch(`${url}/api/mcp/clients`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await clients.json()) as { clients: { name: string }[] };
      assert.deepEqual(body.clients.map((c) => c.name), ["local"]);
    } finally {
      child.kill("SIGTERM");
    }
    assert.equal(await exited, 0, output());
    assert.match(output(), /"gateway stopped"/);
  });

  test("a graceful stop writes every access line the asynchronous log still held", async () => {
    const gw = spawnMain(["--port", "0", "--data-dir", join(dir, "data")], { GW_LOG_LEVEL: "info" });
    const requests = 300;
    try {
      const url = await servingUrl(gw);
      // Concurrent requests, so lines queue up behind writes in flight; the stop follows the last answer.
      const answers = await Promise.all(Array.from({ length: requests }, () => fetch(`${url}/api/mcp/clients`).then((r) => r.status)));
      assert.ok(answers.every((status) => status === 200));
    } finally {
      gw.child.kill("SIGTERM");
    }
    assert.equal(await gw.exited, 0, gw.output());
    const accessLines = gw.output().split("\n").filter((line) => line.includes('"msg":"request"') && line.includes('"path":"/api/mcp/clients"'));
    assert.equal(accessLines.length, requests);
    assert.match(gw.output(), /"gateway stopped"/);
  });

  test("a bad config file stops start-up with the path of the bad field", async () => {
    const config = join(dir, "bad.json");
    await writeFile(config, JSON.stringify({ mcp: { client_configs: [{ name: "a-b", connection_type: "sse", connection_string: "http://127.0.0.1:9/sse" }] } }));
    const { output, exited } = spawnMain(["--config", config, "--port", "0", "--data-dir", join(dir, "data")]);
    assert.equal(await exited, 1);
    assert.match(output(), /mcp\.client_configs\[0\]\.name/);
  });

  test("GW_REQUIRE_AUTH=1 refuses to start on a non-loopback address without admin auth, saying why", async () => {
    const { output, exited } = spawnMain(["--host", "0.0.0.0", "--port", "0", "--data-dir", join(dir, "data")], { GW_REQUIRE_AUTH: "1" });
    assert.equal(await exited, 1);
    assert.match(output(), /gw: cannot start: listening on 0\.0\.0\.0, which is not a loopback address, with admin authentication off/);
  });

  test("an unknown flag is refused with the usage", async () => {
    const { output, exited } = spawnMain(["--prot", "9"]);
    assert.equal(await exited, 2);
    assert.match(output(), /usage: npm start/);
  });
});
