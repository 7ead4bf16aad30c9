/** The supported way to start the gateway: `node --import tsx src/main.ts` with flags, as `npm start` runs it. */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";
import { testDatabaseUrl } from "../helpers/app.js";

const ROOT = new URL("../../", import.meta.url).pathname;

function startMain(args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, GW_DATABASE_URL: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout?.on("data", (c: Buffer) => (text += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (text += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => text, exited };
}

async function waitForUrl(output: () => string, exited: Promise<number | null>): Promise<string> {
  let done = false;
  void exited.then(() => (done = true));
  // Bounded: 600 polls of 100 ms.
  for (let i = 0; i < 600 && !done; i++) {
    const line = output().split("\n").find((l) => l.includes('"gateway listening"'));
    if (line) return (JSON.parse(line) as { url: string }).url;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway did not report listening:\n${output()}`);
}

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
    const { child, output, exited } = startMain(["--config", config, "--port", "0", "--data-dir", join(dir, "data")], { TEST_ADMIN_PW: "pw" });
    try {
      const url = await waitForUrl(output, exited);
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

  test("a bad config file stops start-up with the path of the bad field", async () => {
    const config = join(dir, "bad.json");
    await writeFile(config, JSON.stringify({ mcp: { client_configs: [{ name: "a-b", connection_type: "sse", connection_string: "http://127.0.0.1:9/sse" }] } }));
    const { output, exited } = startMain(["--config", config, "--port", "0", "--data-dir", join(dir, "data")]);
    assert.equal(await exited, 1);
    assert.match(output(), /mcp\.client_configs\[0\]\.name/);
  });

  test("an unknown flag is refused with the usage", async () => {
    const { output, exited } = startMain(["--prot", "9"]);
    assert.equal(await exited, 2);
    assert.match(output(), /usage: npm start/);
  });
});
