/**
 * Session-id identity (x-gw-mcp-session-id) with temp-token links: the submit URL carries a #t= fragment,
 * the page sends it as x-gw-temp-token, a failed verify hands the page a replacement (the token is
 * single-use), and the token never reaches a log line.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";

const SESSION = "chat-session-42";
const OTHER_SESSION = "chat-session-43";
const USER_TOKEN = "session-user-secret";

let fixture: McpFixture;
let app: TestApp;
let browser: TestBrowser;
const tokens: string[] = [];

function execute(session: string | null, text = "hi") {
  const headers: Record<string, string> = session === null ? {} : { "x-gw-mcp-session-id": session };
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: JSON.stringify({ text }) } }, headers);
}

function fragmentToken(submitUrl: string): string {
  const token = new URL(submitUrl).hash.replace(/^#t=/, "");
  tokens.push(token);
  return token;
}

function submit(flow: string, headers: Record<string, string>, extra: Record<string, string> = {}) {
  return api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers }, extra);
}

before(async () => {
  fixture = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["sample", USER_TOKEN] } });
  app = await startApp({ client: { ...DEFAULT_CLIENT, mcpEnableTempTokenAuth: true } });
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm", connection_type: "http", connection_string: fixture.httpUrl, auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "sample" }, tools_to_execute: ["*"],
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await app?.stop();
  await fixture?.close();
});

describe("a session id with temp-token links", () => {
  test("a session without a credential gets a submit URL with a #t= temp-token fragment", async () => {
    const res = await execute(SESSION);
    assert.equal(res.status, 401);
    const url = new URL(res.body.mcp_auth_required.submit_url);
    assert.equal(url.pathname, "/workspace/mcp-sessions/auth");
    assert.equal(url.searchParams.get("kind"), "headers");
    assert.match(url.hash, /^#t=[A-Za-z0-9_-]{43}$/);
    fragmentToken(url.href);
  });

  test("a submission without the temp token is refused", async () => {
    const url = new URL((await execute(SESSION)).body.mcp_auth_required.submit_url);
    const res = await submit(url.searchParams.get("flow") ?? "", { "x-user-token": USER_TOKEN });
    assert.equal(res.status, 401);
    assert.equal(res.body.error.type, "temp_token_invalid");
  });

  test("the token is single-use: a failed verify spends it and answers a replacement, which works once", async () => {
    const submitUrl = (await execute(OTHER_SESSION)).body.mcp_auth_required.submit_url;
    const flow = new URL(submitUrl).searchParams.get("flow") ?? "";
    const first = fragmentToken(submitUrl);
    const failed = await submit(flow, { "x-user-token": "wrong" }, { "x-gw-temp-token": first });
    assert.equal(failed.status, 422);
    assert.equal(typeof failed.body.temp_token, "string");
    tokens.push(failed.body.temp_token);
    const reused = await submit(flow, { "x-user-token": USER_TOKEN }, { "x-gw-temp-token": first });
    assert.equal(reused.status, 401, "the spent token no longer works");
    const ok = await submit(flow, { "x-user-token": USER_TOKEN }, { "x-gw-temp-token": failed.body.temp_token });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.status, "success");
    const again = await submit(flow, { "x-user-token": USER_TOKEN }, { "x-gw-temp-token": failed.body.temp_token });
    assert.equal(again.status, 410);
  });

  test("the page opened from the fragment link shows the session, a wrong value's error and Retry, then saves", async () => {
    const submitUrl = (await execute(SESSION)).body.mcp_auth_required.submit_url;
    fragmentToken(submitUrl);
    const page = await browser.context.newPage();
    await page.goto(submitUrl);
    assert.match((await page.locator("#identity").textContent()) ?? "", new RegExp(`session .${SESSION}.`));
    assert.equal(new URL(page.url()).hash, "", "the page takes the token out of the address bar");
    await page.getByLabel("x-user-token").fill("wrong");
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("#error").waitFor({ state: "visible" });
    assert.match((await page.locator("#error-message").textContent()) ?? "", /upstream verify failed/);
    // Retry works although the first token was spent: the page took the replacement from the 422.
    await page.getByRole("button", { name: "Retry" }).click();
    await page.getByLabel("x-user-token").fill(USER_TOKEN);
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("#saved").waitFor({ state: "visible" });
    await page.close();
  });

  test("the next call with that session id runs with the session's value", async () => {
    const res = await execute(SESSION, "session call");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.content, "session call");
    assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], USER_TOKEN);
  });

  test("the session's credential is listed for that session id only", async () => {
    const mine = await api(app, "GET", "/api/mcp/sessions", undefined, { "x-gw-mcp-session-id": SESSION });
    assert.deepEqual(mine.body.sessions.map((s: { identity_kind: string; identity: string }) => [s.identity_kind, s.identity]), [["session", SESSION]]);
  });

  test("a malformed session id is a 400 naming the header", async () => {
    const res = await execute("has space");
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /x-gw-mcp-session-id/);
  });

  test("no temp token ever reaches a log line", () => {
    assert.ok(tokens.length >= 4);
    const log = app.logLines.join("\n");
    for (const token of tokens) assert.ok(!log.includes(token), "a temp token was logged");
  });
});
