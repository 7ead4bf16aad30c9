/** Upstream MCP sessions over http, sse and stdio against real servers: the fixtures and, if installed, server-everything. */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, beforeEach, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { GatewayError } from "../../src/errors.js";
import { createSessionFactory, type SessionFactory, type UpstreamSession, type UpstreamTarget } from "../../src/mcp/upstream-session.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { childrenMatching } from "../helpers/processes.js";

const STDIO_FIXTURE = fileURLToPath(new URL("../fixtures/stdio-server.ts", import.meta.url));
const TSX = import.meta.resolve("tsx");
const EVERYTHING_DIR = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/", import.meta.url));
const OP = { timeoutMs: 5000 };
/** Spawning node with tsx takes a while on a loaded machine. */
const STDIO_OPEN = { timeoutMs: 20_000 };

const silent = createLogger({ level: "silent" });

function remote(connectionType: "http" | "sse", connectionString: string, headers: Record<string, string> = {}): UpstreamTarget {
  return { connectionType, connectionString, stdioConfig: null, headers };
}

function stdioTarget(command: string, args: string[], envs: string[] = []): UpstreamTarget {
  return { connectionType: "stdio", connectionString: null, stdioConfig: { command, args, envs }, headers: {} };
}

const fixtureTarget = (envs: string[] = []) => stdioTarget(process.execPath, ["--import", TSX, STDIO_FIXTURE], envs);

/** Asserts `promise` rejects with a GatewayError of `type`; returns it. */
async function rejectsWithType(promise: Promise<unknown>, type: string): Promise<GatewayError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof GatewayError, `expected a GatewayError, got ${String(err)}`);
    assert.equal(err.type, type, err.message);
    assert.ok(err.message.length <= 512 && !/\s\s|\n/.test(err.message), "message is collapsed and capped");
    return err;
  }
  assert.fail(`expected a rejection with type ${type}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, "ESRCH");
    return false;
  }
}

/** Resolves with the error passed to the session's onLost callback. */
function lostOf(session: UpstreamSession): Promise<Error> {
  return new Promise((resolve) => session.onLost(resolve));
}

async function childPid(session: UpstreamSession): Promise<number> {
  const pid = Number((await session.callTool("pid", {}, OP)).content);
  assert.ok(Number.isInteger(pid) && pid > 0);
  return pid;
}


describe("upstream sessions over http and sse", () => {
  let fixture: McpFixture;
  let factory: SessionFactory;

  before(async () => {
    fixture = await startMcpFixture({ resultShapeTools: true });
    factory = createSessionFactory({ logger: silent });
  });
  beforeEach(() => fixture.setMode("up"));
  after(async () => {
    await factory.close();
    await fixture.close();
  });

  for (const kind of ["http", "sse"] as const) {
    const url = () => (kind === "http" ? fixture.httpUrl : fixture.sseUrl);

    test(`${kind}: opens, lists tools, calls a tool, pings and closes`, async () => {
      const session = await factory.open(remote(kind, url()), OP);
      try {
        const tools = await session.listTools(OP);
        assert.deepEqual(tools.map((t) => t.name).sort(), ["add", "echo", "fail", "picture", "slow"]);
        assert.equal(tools.find((t) => t.name === "add")?.inputSchema["type"], "object");
        const result = await session.callTool("add", { a: 2, b: 3 }, OP);
        assert.equal(result.content, "5");
        assert.equal(result.isError, false);
        await session.ping(OP);
      } finally {
        await session.close();
      }
    });

    test(`${kind}: sends the client's headers on every request of the session`, async () => {
      const before = fixture.seenHeaders.length;
      const session = await factory.open(remote(kind, url(), { "x-api-key": "k-1" }), OP);
      await session.callTool("echo", { text: "hi" }, OP);
      await session.ping(OP);
      await session.close();
      const seen = fixture.seenHeaders.slice(before);
      assert.ok(seen.length >= 3);
      for (const headers of seen) assert.equal(headers["x-api-key"], "k-1");
      if (kind === "sse") assert.ok(seen.some((h) => h["accept"] === "text/event-stream"), "the GET stream is among them");
    });

    test(`${kind}: a 401 from the upstream is upstream_auth_rejected`, async () => {
      fixture.setMode("reject");
      await rejectsWithType(factory.open(remote(kind, url()), OP), "upstream_auth_rejected");
    });

    test(`${kind}: a 401 on an open session is upstream_auth_rejected`, async () => {
      const session = await factory.open(remote(kind, url()), OP);
      try {
        fixture.setMode("reject");
        await rejectsWithType(session.ping(OP), "upstream_auth_rejected");
      } finally {
        await session.close();
      }
    });

    test(`${kind}: a down upstream is upstream_error`, async () => {
      fixture.setMode("down");
      const err = await rejectsWithType(factory.open(remote(kind, url()), OP), "upstream_error");
      assert.equal(err.code, "unavailable");
    });

    test(`${kind}: a hanging upstream fails open with upstream_timeout`, async () => {
      fixture.setMode("hang");
      const err = await rejectsWithType(factory.open(remote(kind, url()), { timeoutMs: 300 }), "upstream_timeout");
      assert.equal(err.code, "deadline_exceeded");
    });

    test(`${kind}: a tool that does not answer in time fails with upstream_timeout`, async () => {
      const session = await factory.open(remote(kind, url()), OP);
      try {
        await rejectsWithType(session.callTool("slow", { ms: 30_000 }, { timeoutMs: 200 }), "upstream_timeout");
      } finally {
        await session.close();
      }
    });

    test(`${kind}: a tool error comes back as a result with isError, not as a throw`, async () => {
      const session = await factory.open(remote(kind, url()), OP);
      try {
        const result = await session.callTool("fail", {}, OP);
        assert.equal(result.isError, true);
        assert.equal(result.content, "the tool failed on purpose");
      } finally {
        await session.close();
      }
    });
  }

  test("non-text parts of a result are rendered as compact JSON after the text", async () => {
    const session = await factory.open(remote("http", fixture.httpUrl), OP);
    try {
      const result = await session.callTool("picture", {}, OP);
      const [caption, image] = result.content.split("\n");
      assert.equal(caption, "a pixel");
      assert.deepEqual(Object.keys(JSON.parse(image ?? "{}")).sort(), ["data", "mimeType", "type"]);
      assert.ok(Array.isArray((result.raw as { content: unknown[] }).content));
    } finally {
      await session.close();
    }
  });

  test("an aborted signal cancels a call", async () => {
    const session = await factory.open(remote("http", fixture.httpUrl), OP);
    try {
      const controller = new AbortController();
      const call = session.callTool("slow", { ms: 30_000 }, { timeoutMs: 30_000, signal: controller.signal });
      controller.abort(new Error("the user went away"));
      const err = await rejectsWithType(call, "upstream_error");
      assert.match(err.message, /cancelled/);
    } finally {
      await session.close();
    }
  });

  test("close() lets calls in flight finish and refuses new ones", async () => {
    const session = await factory.open(remote("http", fixture.httpUrl), OP);
    const inFlight = session.callTool("slow", { ms: 100 }, OP);
    const closing = session.close();
    await rejectsWithType(session.callTool("echo", { text: "late" }, OP), "upstream_error");
    assert.equal((await inFlight).content, "done");
    await closing;
  });

  test("factory.close() ends calls in flight instead of waiting for them", async () => {
    const own = createSessionFactory({ logger: silent });
    const session = await own.open(remote("sse", fixture.sseUrl), OP);
    const started = fixture.callCount("slow");
    const call = session.callTool("slow", { ms: 60_000 }, { timeoutMs: 60_000 });
    for (let i = 0; i < 200 && fixture.callCount("slow") === started; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const failed = rejectsWithType(call, "upstream_error");
    await own.close();
    await failed;
  });

  test("per-call http sessions reuse the keep-alive pool", async () => {
    const before = fixture.connections;
    const sessions = 10;
    for (let i = 0; i < sessions; i++) {
      const session = await factory.open(remote("http", fixture.httpUrl), OP);
      assert.equal((await session.callTool("echo", { text: `n${i}` }, OP)).content, `n${i}`);
      await session.close();
    }
    assert.ok(fixture.connections - before < sessions, `${fixture.connections - before} TCP connections for ${sessions} sessions`);
  });

  test("sse: a dropped stream calls onLost once and later calls fail fast", async () => {
    const session = await factory.open(remote("sse", fixture.sseUrl), OP);
    let calls = 0;
    session.onLost(() => calls++);
    const lost = lostOf(session);
    assert.ok(fixture.dropSseStreams() >= 1);
    const err = await lost;
    assert.match(err.message, /SSE stream/);
    assert.equal(calls, 1);
    await rejectsWithType(session.ping(OP), "upstream_error");
    await session.close();
  });

  test("close() does not call onLost", async () => {
    const session = await factory.open(remote("sse", fixture.sseUrl), OP);
    let called = false;
    session.onLost(() => {
      called = true;
    });
    await session.close();
    await session.close();
    fixture.dropSseStreams();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(called, false);
  });

  test("a stopped and restarted upstream on the same port serves new sessions", async () => {
    const session = await factory.open(remote("sse", fixture.sseUrl), OP);
    const lost = lostOf(session);
    await fixture.stop();
    await lost;
    await rejectsWithType(factory.open(remote("http", fixture.httpUrl), OP), "upstream_error");
    await fixture.restart();
    const again = await factory.open(remote("sse", fixture.sseUrl), OP);
    assert.equal((await again.callTool("echo", { text: "back" }, OP)).content, "back");
    await again.close();
    await session.close();
  });

  test("the fixture counts calls and the most calls in flight at once", async () => {
    const session = await factory.open(remote("sse", fixture.sseUrl), OP);
    try {
      fixture.concurrent.reset();
      const before = fixture.callCount("slow");
      await Promise.all([50, 60, 70].map((ms) => session.callTool("slow", { ms }, OP)));
      assert.equal(fixture.callCount("slow") - before, 3);
      assert.equal(fixture.concurrent.max, 3);
    } finally {
      await session.close();
    }
  });
});

describe("upstream sessions over stdio", () => {
  let factory: SessionFactory;
  let tmp: string;

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), "gw-stdio-"));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  beforeEach(() => {
    factory = createSessionFactory({ logger: silent, env: { ...process.env, GW_TEST_LISTED: "listed-value", GW_TEST_SECRET: "s3cret" } });
  });

  test("opens, lists tools, calls a tool, pings, and close() leaves no child", async () => {
    try {
      const session = await factory.open(fixtureTarget(), STDIO_OPEN);
      const tools = await session.listTools(OP);
      assert.deepEqual(tools.map((t) => t.name).sort(), ["echo", "env", "pid"]);
      assert.equal((await session.callTool("echo", { text: "over stdio" }, OP)).content, "over stdio");
      await session.ping(OP);
      const pid = await childPid(session);
      assert.ok(isAlive(pid));
      await session.close();
      assert.equal(isAlive(pid), false);
    } finally {
      await factory.close();
    }
  });

  test("the child sees the default environment and the listed variables only", async () => {
    try {
      const session = await factory.open(fixtureTarget(["GW_TEST_LISTED"]), STDIO_OPEN);
      const env = async (name: string) => (await session.callTool("env", { name }, OP)).content;
      assert.equal(await env("GW_TEST_LISTED"), "listed-value");
      assert.equal(await env("GW_TEST_SECRET"), "<unset>");
      assert.equal(await env("PATH"), process.env["PATH"]);
      await session.close();
    } finally {
      await factory.close();
    }
  });

  test("a listed variable that is not set rejects open without spawning", async () => {
    const marker = join(tmp, "spawned");
    try {
      const target = stdioTarget(process.execPath, ["-e", `require("fs").writeFileSync(${JSON.stringify(marker)}, "x")`], ["GW_TEST_NOT_SET"]);
      const err = await rejectsWithType(factory.open(target, STDIO_OPEN), "upstream_error");
      assert.match(err.message, /GW_TEST_NOT_SET/);
      assert.equal(existsSync(marker), false);
    } finally {
      await factory.close();
    }
  });

  test("a command that does not exist rejects with a message naming it", async () => {
    try {
      const err = await rejectsWithType(factory.open(stdioTarget("gw-no-such-command", []), STDIO_OPEN), "upstream_error");
      assert.match(err.message, /gw-no-such-command.*not found/);
    } finally {
      await factory.close();
    }
  });

  test("a child that exits calls onLost with its last stderr line", async () => {
    try {
      const session = await factory.open(fixtureTarget(), STDIO_OPEN);
      const pid = await childPid(session);
      const lost = lostOf(session);
      process.kill(pid, "SIGKILL");
      const err = await lost;
      assert.match(err.message, /exited/);
      assert.match(err.message, /stdio fixture ready/);
      await rejectsWithType(session.callTool("echo", { text: "x" }, OP), "upstream_error");
      await session.close();
    } finally {
      await factory.close();
    }
  });

  test("factory.close() closes open sessions and leaves no child", async () => {
    const first = await factory.open(fixtureTarget(), STDIO_OPEN);
    const second = await factory.open(fixtureTarget(), STDIO_OPEN);
    const pids = [await childPid(first), await childPid(second)];
    await factory.close();
    for (const pid of pids) assert.equal(isAlive(pid), false);
    await rejectsWithType(factory.open(fixtureTarget(), STDIO_OPEN), "upstream_error");
  });

  test("the child's stderr is logged at debug", async () => {
    const destination = new PassThrough();
    const lines: string[] = [];
    destination.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
    const logging = createSessionFactory({ logger: createLogger({ level: "debug", destination }) });
    try {
      const session = await logging.open(fixtureTarget(), STDIO_OPEN);
      await session.ping(OP);
      await session.close();
    } finally {
      await logging.close();
    }
    const stderr = lines.map((l) => JSON.parse(l) as { level: number; msg: string; line?: string }).filter((l) => l.msg === "stdio upstream stderr");
    assert.ok(stderr.some((l) => l.level === 20 && /stdio fixture ready/.test(l.line ?? "")), JSON.stringify(stderr));
  });

  test("the real server-everything over stdio lists tools, echoes, and leaves no child", async (t) => {
    const manifest = join(EVERYTHING_DIR, "package.json");
    if (!existsSync(manifest)) {
      t.skip("@modelcontextprotocol/server-everything is not installed in node_modules (a devDependency)");
      return;
    }
    const bin = (JSON.parse(readFileSync(manifest, "utf8")) as { bin: Record<string, string> }).bin["mcp-server-everything"];
    assert.ok(bin, "server-everything declares its bin");
    const entry = join(EVERYTHING_DIR, bin);
    try {
      const session = await factory.open(stdioTarget(process.execPath, [entry, "stdio"]), STDIO_OPEN);
      const tools = await session.listTools(OP);
      assert.ok(tools.some((tool) => tool.name === "echo"), JSON.stringify(tools.map((tool) => tool.name)));
      const result = await session.callTool("echo", { message: "hi there" }, OP);
      assert.match(result.content, /hi there/);
      assert.equal(result.isError, false);
      const children = await childrenMatching(entry);
      assert.equal(children.length, 1);
      await session.close();
      for (const pid of children) assert.equal(isAlive(pid), false);
    } finally {
      await factory.close();
    }
  });
});
