/**
 * The embedded PGlite database itself: first start in a fresh directory, reopening, and a directory it
 * cannot use. Runs on PGlite whatever GW_TEST_DATABASE_URL says, since that is what it is about.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, describe, test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import { startEmbeddedDatabase } from "../../src/store/embedded-database.js";
import { createEmbeddedTemplate, openStore } from "../../src/store/index.js";
import { Writable } from "node:stream";
import { createLogger } from "../../src/telemetry/logger.js";

const run = promisify(execFile);
const EMBEDDED_MODULE = new URL("../../src/store/embedded-database.ts", import.meta.url).href;
const LOGGER_MODULE = new URL("../../src/telemetry/logger.ts", import.meta.url).href;
const logger = createLogger({ level: "error" });
const dataDirs: string[] = [];

after(async () => {
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
});

async function newDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "gw-embedded-"));
  dataDirs.push(dir);
  return dir;
}

/** Opens the store on the embedded database in `dir` (no url) and asks it a question through the ORM. */
async function selectOne(dir: string): Promise<number> {
  const store = await openStore({ dataDir: dir, logger });
  try {
    const rows = await store.fork().getConnection().execute<{ one: number }[]>("select 1 as one");
    return rows[0]?.one ?? Number.NaN;
  } finally {
    await store.close();
  }
}

describe("embedded database", () => {
  test("creates a database in a fresh directory and answers queries over its socket", async () => {
    const dir = await newDataDir();
    assert.equal(await selectOne(dir), 1);
    await stat(join(dir, "pglite", "PG_VERSION"));
  });

  test("keeps initdb's memory out of the gateway's process", async () => {
    // Measured in a process of its own, so what other tests allocated does not count. In-process,
    // PGlite's initdb leaves the process at about 800-950 MiB; opening an existing directory at about
    // 300-450 MiB. The bound sits between the two.
    const dir = await newDataDir();
    const script = `const { startEmbeddedDatabase } = await import(process.argv[1]);
const { createLogger } = await import(process.argv[2]);
const db = await startEmbeddedDatabase(process.argv[3], createLogger({ level: "error" }));
process.stdout.write(String(process.memoryUsage().rss));
await db.close();`;
    const { stdout } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script, EMBEDDED_MODULE, LOGGER_MODULE, dir]);
    const rssMiB = Number(stdout) / 2 ** 20;
    assert.ok(rssMiB > 0 && rssMiB < 600, `the process held ${rssMiB.toFixed(0)} MiB after a first start`);
  });

  test("a first start copies the build's template, migrations included, instead of running initdb", async () => {
    const template = join(await newDataDir(), "template");
    await createEmbeddedTemplate(template, logger);
    const dir = await newDataDir();
    await (await startEmbeddedDatabase(dir, logger, { templateDir: template })).close();
    // The copy is already migrated: opening the store on it applies nothing, where a cluster fresh
    // from initdb would need every migration.
    const lines: string[] = [];
    const capture = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString("utf8"));
        done();
      },
    });
    const store = await openStore({ dataDir: dir, logger: createLogger({ level: "info", destination: capture }) });
    await store.close();
    assert.ok(lines.some((line) => line.includes("embedded PostgreSQL (PGlite) started")), lines.join(""));
    assert.ok(!lines.some((line) => line.includes("applied database migrations")), lines.join(""));
  });

  test("reopens the directory it created", async () => {
    const dir = await newDataDir();
    await (await startEmbeddedDatabase(dir, logger)).close();
    assert.equal(await selectOne(dir), 1);
  });

  test("starts over after a first start that was interrupted before its database was complete", async () => {
    const dir = await newDataDir();
    // What a first start killed during initdb leaves: a partial cluster beside the final directory.
    await mkdir(join(dir, "pglite.initdb", "base"), { recursive: true });
    await writeFile(join(dir, "pglite.initdb", "PG_VERSION"), "17\n");
    assert.equal(await selectOne(dir), 1);
    await assert.rejects(stat(join(dir, "pglite.initdb")), { code: "ENOENT" });
  });

  test("names the directory when files that are not a database are in the way", async () => {
    const dir = await newDataDir();
    await mkdir(join(dir, "pglite"));
    await writeFile(join(dir, "pglite", "base"), "not a database");
    await assert.rejects(startEmbeddedDatabase(dir, logger), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, "failed_precondition");
      assert.match(err.message, new RegExp(`could not create the embedded database in ${join(dir, "pglite")}`));
      assert.match(err.message, /--data-dir/);
      return true;
    });
  });
});
