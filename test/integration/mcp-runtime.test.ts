/** The connection runtime over real MCP servers: states, checks, re-dials, and tool execution. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";

const TIMING = { healthyCheckMs: 60_000, unstableCheckMs: 60_000, retries: 3, retryDelayMs: 10, operationTimeoutMs: 2_000 };

type Client = { client_id: string; name: string; state: string; last_failure?: { stage: string; message: string; at: string; since: string }; tools: { name: string }[] };

async function clientNamed(app: TestApp, name: string): Promise<Client> {
  const res = await api(app, "GET", `/api/mcp/clients?search=${name}`);
  const found = (res.body.clients as Client[]).find((c) => c.name === name);
  assert.ok(found, `client ${name} listed`);
  return found;
}

async function execute(app: TestApp, name: string, args: unknown = {}, id = "call_1") {
  return api(app, "POST", "/v1/mcp/tool/execute", { id, type: "function", function: { name, arguments: JSON.stringify(args) } });
}

async function create(app: TestApp, body: Record<string, unknown>): Promise<string> {
  const res = await api(app, "POST", "/api/mcp/client", { tools_to_execute: ["*"], ...body });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.client_id as string;
}

/** Polls until `predicate` holds (bounded: 100 tries, 50 ms apart). */
async function eventually(predicate: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`never happened: ${what}`);
}

describe("MCP runtime over http and sse", () => {
  let app: TestApp;
  let fixture: McpFixture;

  before(async () => {
    fixture = await startMcpFixture();
    app = await startApp({ mcpTiming: TIMING });
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  test("a sticky http client connects at creation, is healthy, and runs a tool", async () => {
    await create(app, { name: "sticky", connection_type: "http", connection_string: fixture.httpUrl, needs_session_stickiness: true });
    const client = await clientNamed(app, "sticky");
    assert.equal(client.state, "healthy");
    assert.ok(client.tools.some((t) => t.name === "echo"));
    const res = await execute(app, "sticky-echo", { text: "hello" }, "call_42");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { role: "tool", tool_call_id: "call_42", content: "hello" });
  });

  test("an sse client connects and runs a tool", async () => {
    await create(app, { name: "ssec", connection_type: "sse", connection_string: fixture.sseUrl });
    assert.equal((await clientNamed(app, "ssec")).state, "healthy");
    const res = await execute(app, "ssec-add", { a: 2, b: 3 });
    assert.equal(res.body.content, "5");
  });

  test("a per-call client opens a session per call and runs a tool", async () => {
    await create(app, { name: "percall", connection_type: "http", connection_string: fixture.httpUrl });
    const res = await execute(app, "percall-echo", { text: "x" });
    assert.equal(res.body.content, "x");
  });

  test("headers of a headers client reach the upstream on every call", async () => {
    await create(app, { name: "hdr", connection_type: "http", connection_string: fixture.httpUrl, auth_type: "headers", headers: { "x-api-key": { value: "k1" } } });
    const before = fixture.seenHeaders.length;
    await execute(app, "hdr-echo", { text: "y" });
    const seen = fixture.seenHeaders.slice(before);
    assert.ok(seen.length > 0);
    for (const h of seen) assert.equal(h["x-api-key"], "k1");
  });

  test("a tool outside tools_to_execute is refused even when named directly", async () => {
    await create(app, { name: "limited", connection_type: "http", connection_string: fixture.httpUrl, tools_to_execute: ["echo"] });
    const res = await execute(app, "limited-add", { a: 1, b: 1 });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.type, "tool_not_allowed");
    const ok = await execute(app, "limited-echo", { text: "z" });
    assert.equal(ok.body.content, "z");
  });

  test("offered tools are prefixed with the client name and filtered by tools_to_execute", () => {
    const names = app.runtime.offeredTools().map((t) => t.name);
    assert.ok(names.includes("limited-echo"));
    assert.ok(!names.includes("limited-add"));
    assert.ok(names.includes("sticky-add"));
  });

  test("a rename re-prefixes the tools", async () => {
    const id = await create(app, { name: "before_name", connection_type: "http", connection_string: fixture.httpUrl });
    const res = await api(app, "PUT", `/api/mcp/client/${id}`, { name: "after_name" });
    assert.equal(res.status, 200);
    assert.equal((await execute(app, "after_name-echo", { text: "r" })).body.content, "r");
    assert.equal((await execute(app, "before_name-echo", { text: "r" })).status, 404);
  });

  test("a bad tool call is a 400 naming the field", async () => {
    const noHyphen = await execute(app, "nohyphen");
    assert.equal(noHyphen.status, 400);
    assert.match(noHyphen.body.error.message, /function\.name/);
    const badArgs = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c", type: "function", function: { name: "sticky-echo", arguments: "{oops" } });
    assert.equal(badArgs.status, 400);
    assert.match(badArgs.body.error.message, /function\.arguments/);
    const unknownClient = await execute(app, "ghost-echo");
    assert.equal(unknownClient.status, 404);
  });

  test("a tool call without an id is a 400 naming the field, and the tool does not run", async () => {
    const calls = fixture.callCount("echo");
    const res = await api(app, "POST", "/v1/mcp/tool/execute", { type: "function", function: { name: "sticky-echo", arguments: JSON.stringify({ text: "hi" }) } });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^id: is required/);
    assert.equal(fixture.callCount("echo"), calls);
  });

  test("an upstream tool error comes back as the tool result", async () => {
    // echo without its required text: the upstream answers with an error of its own.
    const res = await execute(app, "sticky-echo", {});
    assert.equal(res.status, 200);
    assert.equal(res.body.role, "tool");
    assert.match(res.body.content, /error/i);
  });

  test("20 concurrent calls on a sticky and a per-call client all succeed", async () => {
    const calls = Array.from({ length: 20 }, (_, i) => [
      execute(app, "sticky-echo", { text: `s${i}` }),
      execute(app, "percall-echo", { text: `p${i}` }),
    ]).flat();
    const results = await Promise.all(calls);
    results.forEach((res, i) => {
      const expected = i % 2 === 0 ? `s${i / 2}` : `p${(i - 1) / 2}`;
      assert.equal(res.body.content, expected);
    });
  });

  test("a slow tool hits tool_execution_timeout and returns an error result while other calls finish", async () => {
    await api(app, "PUT", "/api/settings/mcp/tool-manager-config", { tool_execution_timeout: "300ms" });
    try {
      const [slow, fast] = await Promise.all([execute(app, "sticky-slow", { ms: 3_000 }), execute(app, "sticky-echo", { text: "fast" })]);
      assert.equal(slow.status, 200);
      assert.match(slow.body.content, /timed out/);
      assert.equal(fast.body.content, "fast");
    } finally {
      await api(app, "PUT", "/api/settings/mcp/tool-manager-config", { tool_execution_timeout: "30s" });
    }
  });

  test("disable shuts the client down and refuses calls; enable brings it back", async () => {
    const id = await create(app, { name: "toggle", connection_type: "sse", connection_string: fixture.sseUrl });
    await api(app, "PUT", `/api/mcp/client/${id}`, { disabled: true });
    assert.equal((await clientNamed(app, "toggle")).state, "disabled");
    const refused = await execute(app, "toggle-echo", { text: "n" });
    assert.equal(refused.status, 409);
    assert.match(refused.body.error.message, /disabled/);
    await api(app, "PUT", `/api/mcp/client/${id}`, { disabled: false });
    await eventually(async () => (await clientNamed(app, "toggle")).state === "healthy", "toggle healthy again");
    assert.equal((await execute(app, "toggle-echo", { text: "back" })).body.content, "back");
  });

  test("close drops the sticky connection and reconnect re-dials it", async () => {
    const { client_id: id } = await clientNamed(app, "sticky");
    const closed = await api(app, "POST", `/api/mcp/client/${id}/close`);
    assert.equal(closed.status, 200);
    const after = await clientNamed(app, "sticky");
    assert.equal(after.state, "unstable");
    assert.equal(after.last_failure?.stage, "transport_lost");
    const re = await api(app, "POST", `/api/mcp/client/${id}/reconnect`);
    assert.equal(re.status, 200, JSON.stringify(re.body));
    const healed = await clientNamed(app, "sticky");
    assert.equal(healed.state, "healthy");
    assert.equal(healed.last_failure, undefined);
  });

  test("a client in the store but missing from the runtime reports error and refuses calls", async () => {
    const { McpClientRecord } = await import("../../src/store/index.js");
    const em = app.store.fork();
    em.create(McpClientRecord, { name: "orphan", connectionType: "http", connectionString: fixture.httpUrl, authType: "none", toolsToExecute: ["*"] });
    await em.flush();
    assert.equal((await clientNamed(app, "orphan")).state, "error");
  });
});

describe("MCP runtime state transitions", () => {
  let app: TestApp;
  let fixture: McpFixture;

  before(async () => {
    fixture = await startMcpFixture();
    app = await startApp({ mcpTiming: TIMING });
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  test("sticky: a failed check marks unstable with a ping last_failure; the next passing check heals and clears it", async () => {
    fixture.setMode("up");
    const id = await create(app, { name: "s1", connection_type: "http", connection_string: fixture.httpUrl, needs_session_stickiness: true });
    fixture.setMode("down");
    await app.runtime.check(id);
    const down = await clientNamed(app, "s1");
    assert.equal(down.state, "unstable");
    assert.equal(down.last_failure?.stage, "ping");
    assert.ok(down.last_failure && down.last_failure.message.length <= 512);
    // Tool calls are still attempted while unstable: the error comes back as the result.
    const attempted = await execute(app, "s1-echo", { text: "t" });
    assert.equal(attempted.status, 200);
    assert.match(attempted.body.content, /^Error/);
    await app.runtime.check(id);
    const again = await clientNamed(app, "s1");
    assert.equal(again.last_failure?.since, down.last_failure?.since, "since stays at the first failure of the run");
    assert.ok(Date.parse(again.last_failure?.at ?? "") >= Date.parse(down.last_failure?.at ?? ""));
    fixture.setMode("up");
    await app.runtime.check(id);
    const healed = await clientNamed(app, "s1");
    assert.equal(healed.state, "healthy");
    assert.equal(healed.last_failure, undefined);
    assert.equal((await execute(app, "s1-echo", { text: "ok" })).body.content, "ok");
  });

  test("per-call: a failed discovery marks unstable with stage tool_discovery, a passing one heals", async () => {
    fixture.setMode("up");
    const id = await create(app, { name: "p1", connection_type: "http", connection_string: fixture.httpUrl });
    fixture.setMode("down");
    await app.runtime.check(id);
    const down = await clientNamed(app, "p1");
    assert.equal(down.state, "unstable");
    assert.equal(down.last_failure?.stage, "tool_discovery");
    fixture.setMode("up");
    await app.runtime.check(id);
    assert.equal((await clientNamed(app, "p1")).state, "healthy");
  });

  test("a hanging upstream fails the check by timeout and marks unstable", async () => {
    fixture.setMode("up");
    const id = await create(app, { name: "h1", connection_type: "sse", connection_string: fixture.sseUrl });
    fixture.setMode("hang");
    try {
      await app.runtime.check(id);
      assert.equal((await clientNamed(app, "h1")).state, "unstable");
    } finally {
      fixture.setMode("up");
    }
  });

  test("a rejected credential on a server-wide client moves it to needs_reauth and refuses calls; new headers heal it", async () => {
    fixture.setMode("up");
    const id = await create(app, { name: "cred", connection_type: "sse", connection_string: fixture.sseUrl, auth_type: "headers", headers: { authorization: { value: "Bearer old" } } });
    fixture.setMode("reject");
    await app.runtime.check(id);
    const dead = await clientNamed(app, "cred");
    assert.equal(dead.state, "needs_reauth");
    assert.equal(dead.last_failure?.stage, "credential");
    const refused = await execute(app, "cred-echo", { text: "x" });
    assert.equal(refused.status, 409);
    assert.match(refused.body.error.message, /credential/);
    fixture.setMode("up");
    // The checker has stopped: a check does not heal it.
    await app.runtime.check(id);
    assert.equal((await clientNamed(app, "cred")).state, "needs_reauth");
    const res = await api(app, "PUT", `/api/mcp/client/${id}`, { headers: { authorization: { value: "Bearer new" } } });
    assert.equal(res.status, 200);
    await eventually(async () => (await clientNamed(app, "cred")).state === "healthy", "cred healthy after new headers");
  });

  test("a client whose first connect fails is created unstable with a connect last_failure", async () => {
    fixture.setMode("down");
    try {
      const res = await api(app, "POST", "/api/mcp/client", { name: "born_down", connection_type: "sse", connection_string: fixture.sseUrl });
      assert.equal(res.status, 200);
      assert.match(res.body.message, /unstable/);
      const client = await clientNamed(app, "born_down");
      assert.equal(client.state, "unstable");
      assert.equal(client.last_failure?.stage, "connect");
    } finally {
      fixture.setMode("up");
    }
  });

  test("state changes are logged at INFO with stage and message; repeated failures at DEBUG", async () => {
    const lines = app.logLines.map((l) => JSON.parse(l) as { level: number; msg: string; client?: string; stage?: string; message?: string; to?: string });
    const changes = lines.filter((l) => l.msg === "MCP client state changed" && l.client === "s1");
    assert.ok(changes.some((l) => l.level === 30 && l.to === "unstable" && l.stage === "ping" && typeof l.message === "string"));
    assert.ok(changes.some((l) => l.level === 30 && l.to === "healthy"));
    assert.ok(lines.some((l) => l.msg === "MCP client check failed" && l.client === "s1" && l.level === 20));
  });
});

describe("MCP runtime recovery without admin action", () => {
  let app: TestApp;
  let fixture: McpFixture;

  before(async () => {
    fixture = await startMcpFixture();
    app = await startApp({ mcpTiming: { ...TIMING, healthyCheckMs: 100, unstableCheckMs: 100 } });
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  test("an upstream killed and restarted goes unstable, then healthy again by itself", async () => {
    await create(app, { name: "k1", connection_type: "sse", connection_string: fixture.sseUrl });
    await fixture.stop();
    await eventually(async () => (await clientNamed(app, "k1")).state === "unstable", "k1 unstable");
    await fixture.restart();
    await eventually(async () => (await clientNamed(app, "k1")).state === "healthy", "k1 healthy");
    assert.equal((await execute(app, "k1-echo", { text: "alive" })).body.content, "alive");
  });

  test("a re-dial replaces the sticky connection without failing calls in flight", async () => {
    const id = await create(app, { name: "mbb", connection_type: "http", connection_string: fixture.httpUrl, needs_session_stickiness: true });
    const calls = Array.from({ length: 20 }, (_, i) => execute(app, "mbb-slow", { ms: 50 + i }, `c${i}`));
    const re = await api(app, "POST", `/api/mcp/client/${id}/reconnect`);
    assert.equal(re.status, 200);
    for (const res of await Promise.all(calls)) assert.equal(res.body.content, "done");
  });
});
