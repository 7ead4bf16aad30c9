/**
 * The compiled production start: `npm start` runs dist/main.js, and stopping npm stops the gateway with it;
 * the bundle, which holds the npm packages itself, serves inference, MCP and tracing on its own.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { access, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { UMZUG_CLI_LEFT_OUT } from "../../src/build-bundle.js";
import { dropSchema, randomSchemaName } from "../../src/store/index.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { testDatabaseUrl } from "../helpers/app.js";
import { ROOT, servingUrl, spawnGateway } from "../helpers/gateway-process.js";
import { sdk } from "../helpers/inference.js";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";
import { processesMatching } from "../helpers/processes.js";

const NPM = process.platform === "win32" ? "npm.cmd" : "npm";
const EVERYTHING = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url));

// The tests run what `npm ci` builds; building again makes them test this tree's sources.
before(() => promisify(execFile)(NPM, ["run", "build"], { cwd: ROOT }));

/**
 * Every JavaScript file of dist/ that dist/main.js imports, at once or lazily, by name with its text: a
 * build leaves the chunks of earlier builds beside its own, so listing the folder would find those too.
 */
async function filesMainLoads(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const pending = ["main.js"];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (files.has(file)) continue;
    const code = await readFile(join(ROOT, "dist", file), "utf8");
    files.set(file, code);
    for (const [, next] of code.matchAll(/(?:from ?|import\()"\.\/([\w-]+\.js)"/g)) if (next !== undefined) pending.push(next);
  }
  return files;
}

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

describe("the bundle", () => {
  let dir: string;
  let upstream: MockUpstream;
  let receiver: OtlpReceiver;
  // On a PostgreSQL server the bundle starts in a new schema, so the migrations run from it too.
  const schema = randomSchemaName();
  const TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4736";

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-bundle-"));
    upstream = await startMockOpenAi();
    receiver = await startOtlpReceiver();
  });
  after(async () => {
    await upstream?.close();
    await receiver?.close();
    if (testDatabaseUrl) await dropSchema(testDatabaseUrl, schema);
    await rm(dir, { recursive: true, force: true });
  });

  test("a first start of dist/main.js serves a chat completion, an MCP tool over stdio and exports the call's span", async () => {
    const config = join(dir, "gw.json");
    await writeFile(config, JSON.stringify({
      providers: { openai: { keys: [{ id: "oa", name: "oa", value: "sk-oa", models: ["gpt-4o-mini"] }], network_config: { base_url: upstream.url } } },
      mcp: { client_configs: [{ name: "everything", connection_type: "stdio", stdio_config: { command: process.execPath, args: [EVERYTHING, "stdio"] }, tools_to_execute: ["*"] }] },
    }));
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, GW_DATABASE_URL: testDatabaseUrl ?? "", GW_DATABASE_SCHEMA: schema };
    const gw = spawnGateway(process.execPath, ["dist/main.js", "--config", config, "--port", "0", "--data-dir", join(dir, "data")], env);
    try {
      const url = await servingUrl(gw);
      const answer = await sdk({ url }, null).chat.completions.create(
        { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "from the bundle" }] },
        // No MCP tools offered: once the stdio server is up, its tools would be, and the mock would call one.
        { headers: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, "x-gw-mcp-include-clients": "" } },
      );
      assert.equal(answer.choices[0]?.message.content, "echo: from the bundle");
      let result: { status: number; content?: string } = { status: 0 };
      // The stdio server's tools are listed once it has started; bounded polling for that moment.
      for (let i = 0; i < 200 && result.status !== 200; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 100));
        const res = await fetch(`${url}/v1/mcp/tool/execute`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ id: "c1", type: "function", function: { name: "everything-echo", arguments: JSON.stringify({ message: "bundled" }) } }),
        });
        result = { status: res.status, ...((await res.json()) as { content?: string }) };
      }
      assert.equal(result.status, 200, JSON.stringify(result));
      assert.match(result.content ?? "", /bundled/);
    } finally {
      gw.child.kill("SIGTERM");
    }
    assert.equal(await gw.exited, 0, gw.output());
    // The exporter flushes on the graceful stop; the span continues the caller's trace.
    const server = receiver.spans.find((s) => s.traceId === TRACE_ID && s.kind === 2);
    assert.ok(server, JSON.stringify(receiver.spans.map((s) => [s.name, s.traceId, s.kind])));
    assert.match(server.name, /^POST \/v1\/chat\/completions/);
    assert.equal(server.parentSpanId, "00f067aa0ba902b7");
  });

  test("every JavaScript file dist/main.js loads is ASCII, so V8 holds its source one byte per character", async () => {
    const files = await filesMainLoads();
    for (const [file, code] of files) assert.doesNotMatch(code, /[^\x00-\x7f]/, `dist/${file} holds non-ASCII text`);
    assert.ok(files.size > 1, `the crawl found the chunks: ${[...files.keys()].join(", ")}`);
  });

  // The migrations themselves run from the bundle in the first-start test above on a PostgreSQL server, and in
  // `npm run build`'s template step on the embedded database.
  test("the bundle stands a refusing module in for umzug's command line and holds none of its libraries", async () => {
    const files = await filesMainLoads();
    assert.ok([...files.values()].some((code) => code.includes(JSON.stringify(UMZUG_CLI_LEFT_OUT))), "a chunk holds the stand-in's refusal");
    for (const [file, code] of files) assert.doesNotMatch(code, /^\/\/ node_modules\/(@rushstack|argparse|jju)\//m, `dist/${file} bundles a library of umzug's command line`);
  });
});
