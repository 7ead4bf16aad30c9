/**
 * What a serving gateway needs before it starts, on node's command line (servingNodeFlags) and in its
 * environment (SERVING_ENVIRONMENT), is given by one launcher, `bin/gw-serve`, which the three places a user
 * starts it from run: `npm start`, the Dockerfile and the systemd unit in docs/operations.md. The launcher is run
 * here with a stand-in `node` first on PATH that prints what it was started with.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { EMBEDDED_DATABASE_NODE_FLAGS, embeddedFlagsOnServer, SERVING_ENVIRONMENT, SERVING_NODE_FLAGS, servingNodeFlags } from "../../src/serving-environment.js";

const ROOT = new URL("../../", import.meta.url);
const LAUNCHER = fileURLToPath(new URL("bin/gw-serve", ROOT));
const read = (file: string): Promise<string> => readFile(new URL(file, ROOT), "utf8");
const NAMES = Object.keys(SERVING_ENVIRONMENT);

let stubDir: string;
before(async () => {
  stubDir = await mkdtemp(join(tmpdir(), "gw-serve-stub-"));
  // One line per serving variable as NAME=value, then one per argument.
  const lines = [...NAMES.map((name) => `"${name}=$${name}"`), '"$@"'].join(" ");
  await writeFile(join(stubDir, "node"), `#!/bin/sh\nprintf '%s\\n' ${lines}\n`);
  await chmod(join(stubDir, "node"), 0o755);
});
after(() => rm(stubDir, { recursive: true, force: true }));

/** What the launcher started node with, given `env` on top of a clean environment. */
async function launched(env: Record<string, string>): Promise<string[]> {
  const { stdout } = await promisify(execFile)(LAUNCHER, ["--port", "0"], { env: { PATH: `${stubDir}${delimiter}${process.env["PATH"] ?? ""}`, ...env } });
  return stdout.trimEnd().split("\n");
}

const expected = (embedded: boolean): string[] => [
  ...Object.entries(SERVING_ENVIRONMENT).map(([name, value]) => `${name}=${value}`),
  ...servingNodeFlags(embedded),
  `${dirname(LAUNCHER)}/../dist/main.js`,
  "--port",
  "0",
];

test("serves with node flags and environment settings the process cannot apply itself", () => {
  assert.ok(SERVING_NODE_FLAGS.length > 0 && EMBEDDED_DATABASE_NODE_FLAGS.length > 0 && NAMES.length > 0);
  for (const flag of [...SERVING_NODE_FLAGS, ...EMBEDDED_DATABASE_NODE_FLAGS]) assert.match(flag, /^--[a-z-]+(=\S+)?$/);
  for (const [name, value] of Object.entries(SERVING_ENVIRONMENT)) assert.match(`${name}=${value}`, /^[A-Z_]+=\S+$/);
});

test("the launcher runs node with the embedded database's flags too when GW_DATABASE_URL is unset", async () => {
  assert.deepEqual(await launched({}), expected(true));
  assert.deepEqual(await launched({ GW_DATABASE_URL: "" }), expected(true));
});

test("the launcher leaves the embedded database's flags out when GW_DATABASE_URL names a server", async () => {
  assert.deepEqual(await launched({ GW_DATABASE_URL: "postgres://gw@127.0.0.1:5432/gw" }), expected(false));
});

test("npm start runs the launcher in its place", async () => {
  const manifest = JSON.parse(await read("package.json")) as { scripts: Record<string, string> };
  assert.equal(manifest.scripts["start"], "exec bin/gw-serve");
});

test("the Docker image holds the launcher and its command runs it", async () => {
  const dockerfile = await read("Dockerfile");
  assert.match(dockerfile, /^COPY bin \.\/bin$/m);
  const command = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
  assert.ok(command, "the Dockerfile has a CMD in exec form");
  assert.equal((JSON.parse(command) as string[])[0], "bin/gw-serve");
});

test("the systemd unit in docs/operations.md runs the launcher", async () => {
  const page = await read("docs/operations.md");
  const execStart = /^ExecStart=(.*)$/m.exec(page)?.[1];
  assert.ok(execStart, "docs/operations.md has a systemd unit");
  assert.match(execStart, /^\/opt\/gw\/bin\/gw-serve /);
  assert.match(page, /^WorkingDirectory=\/opt\/gw$/m);
});

test("a gateway on a PostgreSQL server started with the embedded database's flags is told how to start without them", () => {
  const hint = embeddedFlagsOnServer([...servingNodeFlags(true)], "postgres://gw@127.0.0.1:5432/gw");
  assert.ok(hint !== undefined);
  for (const flag of EMBEDDED_DATABASE_NODE_FLAGS) assert.ok(hint.includes(flag), hint);
  assert.match(hint, /GW_DATABASE_URL/);
});

test("no hint when the flags fit the database", () => {
  assert.equal(embeddedFlagsOnServer([...servingNodeFlags(true)], undefined), undefined);
  assert.equal(embeddedFlagsOnServer([...servingNodeFlags(false)], "postgres://gw@127.0.0.1:5432/gw"), undefined);
  assert.equal(embeddedFlagsOnServer([...servingNodeFlags(true), "--no-liftoff-only"], "postgres://gw@127.0.0.1:5432/gw"), undefined);
});
