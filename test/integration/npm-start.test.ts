/** The compiled production start: `npm start` runs dist/main.js, and stopping npm stops the gateway with it. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { access, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { testDatabaseUrl } from "../helpers/app.js";
import { ROOT, servingUrl, spawnGateway } from "../helpers/gateway-process.js";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";
import { processesMatching } from "../helpers/processes.js";

const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

/** Resolves true when nothing listens on 127.0.0.1:port (we could bind it ourselves). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

describe("npm start", { skip: testDatabaseUrl ? "runs on the embedded database only" : false }, () => {
  let dir: string;
  before(async () => {
    // The test runs what `npm ci` builds; building again makes it test this tree's sources.
    await promisify(execFile)(NPM, ["run", "build"], { cwd: ROOT });
    dir = await mkdtemp(join(tmpdir(), "gw-npm-start-"));
    await seedEmbeddedDatabase(join(dir, "data"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("SIGTERM to npm stops the gateway: the port and the embedded database are released and no gateway process is left", async () => {
    const dataDir = join(dir, "data");
    const gw = spawnGateway(NPM, ["start", "--", "--port", "0", "--data-dir", dataDir]);
    let port = 0;
    try {
      const url = await servingUrl(gw);
      port = Number(new URL(url).port);
      assert.equal((await fetch(`${url}/health`)).status, 200);
      assert.ok((await processesMatching(dataDir)).length > 0, "the gateway runs under npm");
    } finally {
      gw.child.kill("SIGTERM");
    }
    await gw.exited;
    const left = await processesMatching(dataDir);
    // An orphan would hold this test's pipes open and the run with them.
    for (const pid of left) process.kill(pid, "SIGKILL");
    assert.deepEqual(left, [], "no process started with this data directory is left");
    assert.match(gw.output(), /"gateway stopped"/);
    assert.equal(await portIsFree(port), true, `port ${port} is free again`);
    await assert.rejects(access(join(dataDir, ".s.PGSQL.5432")), "the embedded database's socket is gone");
  });
});
