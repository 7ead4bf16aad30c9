/** Every validation rule of the MCP client configuration, each with a bad input, its status, and the field named. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";

describe("MCP client validation", () => {
  let app: TestApp;
  let fixture: McpFixture;
  let admin: Record<string, string>;

  before(async () => {
    fixture = await startMcpFixture({ requireHeader: { name: "x-user-token", value: "good" } });
    app = await startApp({ auth: { enabled: true, username: "admin", password: "pw", sessionTtlMs: 3_600_000 } });
    const login = await api(app, "POST", "/api/session/login", { username: "admin", password: "pw" });
    admin = { authorization: `Bearer ${login.body.token}` };
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  const http = () => ({ connection_type: "http", connection_string: fixture.httpUrl });
  const sse = () => ({ connection_type: "sse", connection_string: fixture.sseUrl });

  async function expectRejected(body: unknown, status: number, field: RegExp, message?: RegExp) {
    const res = await api(app, "POST", "/api/mcp/client", body, admin);
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.ok(res.body.error, "error envelope");
    assert.match(res.body.error.message, field);
    if (message) assert.match(res.body.error.message, message);
    return res;
  }

  async function create(body: Record<string, unknown>): Promise<string> {
    const res = await api(app, "POST", "/api/mcp/client", body, admin);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.client_id as string;
  }

  test("rejects a client name the MCP endpoint's own paths take", async () => {
    await expectRejected({ name: "messages", ...sse() }, 400, /^name:/, /is reserved/);
  });

  test("rejects a hyphen in the client name", async () => {
    await expectRejected({ name: "my-docs", ...sse() }, 400, /^name:/, /hyphen/);
  });

  test("rejects a missing client name", async () => {
    await expectRejected({ ...sse() }, 400, /^name:/, /required/);
  });

  test("rejects a name that cannot prefix a function name", async () => {
    await expectRejected({ name: "docs server", ...sse() }, 400, /^name:/);
  });

  test("rejects a missing connection_type", async () => {
    await expectRejected({ name: "noconn", connection_string: fixture.httpUrl }, 400, /connection_type/);
  });

  test("rejects an unknown connection_type value", async () => {
    await expectRejected({ name: "badconn", connection_type: "websocket", connection_string: fixture.httpUrl }, 400, /connection_type/);
  });

  test("rejects an http client without a connection_string", async () => {
    await expectRejected({ name: "nourl", connection_type: "http" }, 400, /^connection_string:/);
  });

  test("rejects a connection_string that is not an http(s) URL", async () => {
    await expectRejected({ name: "ftpurl", connection_type: "sse", connection_string: "ftp://example.test/x" }, 400, /^connection_string:/);
  });

  test("rejects a stdio client without stdio_config.command", async () => {
    await expectRejected({ name: "nocmd", connection_type: "stdio" }, 400, /^stdio_config\.command:/);
  });

  test("rejects stdio_config on an http client", async () => {
    await expectRejected({ name: "mixed", ...http(), stdio_config: { command: "node" } }, 400, /^stdio_config:/);
  });

  test("stdio accepts only auth_type none", async () => {
    await expectRejected(
      { name: "stdiohdr", connection_type: "stdio", stdio_config: { command: "node" }, auth_type: "headers", headers: { a: { value: "b" } } },
      400,
      /^auth_type:/,
      /only auth_type none/,
    );
  });

  test("per_user_headers is valid only for http and sse", async () => {
    await expectRejected(
      { name: "stdiopu", connection_type: "stdio", stdio_config: { command: "node" }, auth_type: "per_user_headers", per_user_header_keys: ["x"] },
      400,
      /^auth_type:/,
    );
  });

  test("rejects needs_session_stickiness false on sse", async () => {
    await expectRejected({ name: "ssefalse", ...sse(), needs_session_stickiness: false }, 400, /^needs_session_stickiness:/);
  });

  test("rejects needs_session_stickiness false on stdio", async () => {
    await expectRejected(
      { name: "stdiofalse", connection_type: "stdio", stdio_config: { command: "node" }, needs_session_stickiness: false },
      400,
      /^needs_session_stickiness:/,
    );
  });

  test("accepts needs_session_stickiness true on sse and false on http", async () => {
    await create({ name: "ssetrue", ...sse(), needs_session_stickiness: true });
    await create({ name: "httpfalse", ...http(), needs_session_stickiness: false });
  });

  test("per_user_headers needs a non-empty per_user_header_keys", async () => {
    await expectRejected({ name: "pu_empty", ...http(), auth_type: "per_user_headers", per_user_header_keys: [] }, 400, /^per_user_header_keys:/);
  });

  test("per_user_header_keys is refused on other auth types", async () => {
    await expectRejected({ name: "pu_other", ...http(), per_user_header_keys: ["x-a"] }, 400, /^per_user_header_keys:/);
  });

  test("user_headers must cover every declared key", async () => {
    await expectRejected(
      { name: "pu_cover", ...http(), auth_type: "per_user_headers", per_user_header_keys: ["x-user-token", "x-team"], user_headers: { "x-user-token": "good" } },
      400,
      /^user_headers\.x-team:/,
      /cover every/,
    );
  });

  test("user_headers may not carry undeclared keys", async () => {
    await expectRejected(
      { name: "pu_extra", ...http(), auth_type: "per_user_headers", per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "good", "x-other": "1" } },
      400,
      /^user_headers\.x-other:/,
    );
  });

  test("user_headers are refused on clients that are not per_user_headers", async () => {
    await expectRejected({ name: "uh_other", ...http(), user_headers: { a: "b" } }, 400, /^user_headers:/);
  });

  test("create with user_headers the upstream rejects is a 422 with the upstream error and persists nothing", async () => {
    const res = await expectRejected(
      { name: "pu_bad", ...http(), auth_type: "per_user_headers", per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "wrong" } },
      422,
      /upstream verify failed/,
    );
    assert.equal(res.body.error.type, "upstream_verify_failed");
    const listed = await api(app, "GET", "/api/mcp/clients?search=pu_bad", undefined, admin);
    assert.equal(listed.body.total_count, 0);
  });

  test("create with user_headers the upstream accepts states the number of discovered tools", async () => {
    const res = await api(app, "POST", "/api/mcp/client", {
      name: "pu_good", ...http(), auth_type: "per_user_headers", per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "good" },
      headers: { "x-static": { value: "s" } },
    }, admin);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.message, /3 tools discovered/);
    const seen = fixture.seenHeaders.at(-1);
    assert.equal(seen?.["x-user-token"], "good");
    assert.equal(seen?.["x-static"], "s");
  });

  test("a static header named like a per-user key is dropped on the wire for the user's value", async () => {
    const res = await api(app, "POST", "/api/mcp/client", {
      name: "pu_override", ...http(), auth_type: "per_user_headers", per_user_header_keys: ["x-user-token"],
      headers: { "X-User-Token": { value: "static-wrong" } }, user_headers: { "x-user-token": "good" },
    }, admin);
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test("token_exchange needs its token_exchange block", async () => {
    await expectRejected({ name: "a_token_exchange", ...http(), auth_type: "token_exchange" }, 400, /^token_exchange:/, /is required/);
  });

  test("headers are only sent with auth_type headers or per_user_headers", async () => {
    await expectRejected({ name: "hdr_none", ...http(), headers: { a: { value: "b" } } }, 400, /^headers:/);
  });

  test("auth_type headers needs at least one header", async () => {
    await expectRejected({ name: "hdr_empty", ...http(), auth_type: "headers" }, 400, /^headers:/);
  });

  test("rejects a header name that is not an HTTP token", async () => {
    await expectRejected({ name: "hdr_bad", ...http(), auth_type: "headers", headers: { "bad name": { value: "v" } } }, 400, /^headers\.bad name:/);
  });

  test("rejects a header value with a line break, without echoing the value", async () => {
    const res = await expectRejected({ name: "hdr_crlf", ...http(), auth_type: "headers", headers: { a: { value: "x\r\nInjected: 1" } } }, 400, /^headers\.a:/);
    assert.doesNotMatch(res.body.error.message, /Injected/);
  });

  test("tools_to_execute cannot mix * with named tools", async () => {
    await expectRejected({ name: "tools_mix", ...sse(), tools_to_execute: ["*", "echo"] }, 400, /^tools_to_execute:/);
  });

  test("tools_to_auto_execute rejects duplicates", async () => {
    await expectRejected({ name: "auto_dup", ...sse(), tools_to_auto_execute: ["echo", "echo"] }, 400, /^tools_to_auto_execute\[1\]:/);
  });

  test("a second client with the same name is a 409", async () => {
    await create({ name: "twice", ...sse() });
    const res = await expectRejected({ name: "twice", ...sse() }, 409, /twice/);
    assert.equal(res.body.error.type, "already_exists");
  });

  for (const [field, value] of [
    ["connection_type", "sse"],
    ["connection_string", "http://127.0.0.1:9/other"],
    ["stdio_config", { command: "node" }],
    ["auth_type", "headers"],
  ] as const) {
    test(`rejects a change of immutable ${field}`, async () => {
      const id = await create({ name: `imm_${field}`, ...http() });
      const res = await api(app, "PUT", `/api/mcp/client/${id}`, { [field]: value }, admin);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, new RegExp(`^${field}: is immutable`));
    });
  }

  test("an immutable field sent unchanged is accepted", async () => {
    const id = await create({ name: "imm_same", ...http() });
    const res = await api(app, "PUT", `/api/mcp/client/${id}`, { connection_type: "http", connection_string: fixture.httpUrl, tools_to_execute: ["echo"] }, admin);
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test("user_headers on update point to verify-headers", async () => {
    const id = await create({ name: "upd_uh", ...sse() });
    const res = await api(app, "PUT", `/api/mcp/client/${id}`, { user_headers: { a: "b" } }, admin);
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^user_headers:.*verify-headers/);
  });

  test("an update that breaks a rule is refused and changes nothing", async () => {
    const id = await create({ name: "upd_rule", ...sse(), tools_to_execute: ["echo"] });
    const res = await api(app, "PUT", `/api/mcp/client/${id}`, { name: "bad-name", tools_to_execute: [] }, admin);
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^name:/);
    const listed = await api(app, "GET", "/api/mcp/clients?search=upd_rule", undefined, admin);
    assert.deepEqual(listed.body.clients[0].tools_to_execute, ["echo"]);
  });

  test("renaming onto another client's name is a 409", async () => {
    const id = await create({ name: "ren_a", ...sse() });
    await create({ name: "ren_b", ...sse() });
    const res = await api(app, "PUT", `/api/mcp/client/${id}`, { name: "ren_b" }, admin);
    assert.equal(res.status, 409);
  });

  test("emptying per_user_header_keys through the API is refused", async () => {
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "pu_keys", ...http(), auth_type: "per_user_headers", per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "good" },
    }, admin);
    const res = await api(app, "PUT", `/api/mcp/client/${created.body.client_id}`, { per_user_header_keys: [] }, admin);
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^per_user_header_keys:/);
  });
});
