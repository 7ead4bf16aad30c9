/**
 * Caller identity with admin authentication on: a signed-in user of the gateway is the "user" identity
 * (user > virtual key > session), user flows carry no temp token and only the bound user can finish them
 * (the page signs in first, in Chromium), and anonymous submissions of other flows need the link's token.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";

const PASSWORD = "admin-password-1";
const ALICE = "sk-gw-alice";
const USER_TOKEN = "admin-user-upstream-token";
const ALICE_TOKEN = "alice-upstream-token";

let fixture: McpFixture;
let app: TestApp;
let browser: TestBrowser;
let session: string;

function execute(headers: Record<string, string>) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: "{\"text\":\"x\"}" } }, headers);
}

function flowOf(res: { body: { mcp_auth_required: { submit_url: string } } }): string {
  return new URL(res.body.mcp_auth_required.submit_url).searchParams.get("flow") ?? "";
}

before(async () => {
  fixture = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["sample", USER_TOKEN, ALICE_TOKEN] } });
  app = await startApp({
    auth: { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 },
    client: { ...DEFAULT_CLIENT, mcpEnableTempTokenAuth: true },
    inference: inferenceOptionsFromFile({}, [{ id: "vk-alice", name: "alice", value: ALICE, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] }]),
  });
  session = (await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD })).body.token;
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm", connection_type: "http", connection_string: fixture.httpUrl, auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "sample" }, tools_to_execute: ["*"],
  }, { authorization: `Bearer ${session}` });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await app?.stop();
  await fixture?.close();
});

describe("user identity", () => {
  test("a signed-in user's call opens a user flow whose link has no temp token, even with temp tokens on", async () => {
    const res = await execute({ authorization: `Bearer ${session}` });
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(new URL(res.body.mcp_auth_required.submit_url).hash, "");
    const flow = await api(app, "GET", `/api/mcp/per-user-headers/flows/${flowOf(res)}`, undefined, { authorization: `Bearer ${session}` });
    assert.deepEqual(flow.body.identity, { kind: "user", name: "admin" });
  });

  test("a user flow cannot be finished without signing in as that user", async () => {
    const flow = flowOf(await execute({ authorization: `Bearer ${session}` }));
    const res = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": USER_TOKEN } });
    assert.equal(res.status, 401);
    assert.equal(res.body.error.type, "flow_user_mismatch");
  });

  test("the page signs the user in and saves the credential; the user's next call runs with it", async () => {
    const submitUrl = (await execute({ authorization: `Bearer ${session}` })).body.mcp_auth_required.submit_url;
    const page = await browser.context.newPage();
    await page.goto(submitUrl);
    assert.match((await page.locator("#identity").textContent()) ?? "", /signed-in user .admin./);
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByLabel("x-user-token").fill(USER_TOKEN);
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("#error").waitFor({ state: "visible" });
    await page.getByRole("button", { name: "Retry" }).click();
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("#saved").waitFor({ state: "visible" });
    await page.close();
    assert.equal((await execute({ authorization: `Bearer ${session}` })).status, 200);
    assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], USER_TOKEN);
  });

  test("user wins over a virtual key: with both, the user's credential is used", async () => {
    const res = await execute({ authorization: `Bearer ${session}`, "x-gw-vk": ALICE });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], USER_TOKEN);
  });
});

describe("virtual key and session identities with admin auth on", () => {
  test("a virtual key wins over a session id", async () => {
    const res = await execute({ "x-gw-vk": ALICE, "x-gw-mcp-session-id": "s-1" });
    assert.equal(res.status, 401);
    assert.match(res.body.mcp_auth_required.message, /virtual key "alice"/);
  });

  test("an anonymous submission of a virtual-key flow needs the link's temp token; a signed-in admin may finish it", async () => {
    const res = await execute({ "x-gw-vk": ALICE });
    const flow = flowOf(res);
    assert.match(new URL(res.body.mcp_auth_required.submit_url).hash, /^#t=/);
    const anonymous = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": ALICE_TOKEN } });
    assert.equal(anonymous.status, 401);
    const admin = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": ALICE_TOKEN } }, { authorization: `Bearer ${session}` });
    assert.equal(admin.status, 200, JSON.stringify(admin.body));
    assert.equal((await execute({ "x-gw-vk": ALICE })).status, 200);
    assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], ALICE_TOKEN);
  });

  test("the sessions listing shows a signed-in user every credential and refuses a caller without identity", async () => {
    const all = await api(app, "GET", "/api/mcp/sessions", undefined, { authorization: `Bearer ${session}` });
    assert.deepEqual(all.body.sessions.map((s: { identity_kind: string }) => s.identity_kind).sort(), ["user", "vk"]);
    const anonymous = await api(app, "GET", "/api/mcp/sessions");
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.body.error.message, /requires an identity/);
  });
});
