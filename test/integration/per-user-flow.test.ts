/**
 * The per-user credential round trip with virtual keys: the fixture MCP server accepts only each user's
 * own x-user-token; a caller without identity gets the inline 401, a key without a credential gets
 * mcp_auth_required (and the tool does not run), the page in headless Chromium shows the error and Retry
 * for a wrong value and the confirmation for the right one, and the next call carries that user's value.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";

const ALICE = "sk-gw-alice";
const BOB = "sk-gw-bob";
const ALICE_TOKEN = "alice-upstream-secret";
const BOB_TOKEN = "bob-upstream-secret";
const ADMIN_SAMPLE = "admin-sample-secret";

let fixture: McpFixture;
let app: TestApp;
let browser: TestBrowser;
let clientId: string;
/** Alice's flow, to show Bob gets his own. */
let aliceFlow: string | null = null;

function execute(headers: Record<string, string>, text = "hello") {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "call_1", type: "function", function: { name: "crm-echo", arguments: JSON.stringify({ text }) } }, headers);
}

/** The x-user-token of the most recent tools/call request the fixture received. */
function lastCallToken(): string | undefined {
  return fixture.seenHeaders.at(-1)?.["x-user-token"];
}

async function openPage(url: string): Promise<Page> {
  const page = await browser.context.newPage();
  const res = await page.goto(url);
  assert.equal(res?.status(), 200);
  return page;
}

async function submitInPage(page: Page, value: string): Promise<void> {
  await page.getByLabel("x-user-token").fill(value);
  await page.getByRole("button", { name: "Save" }).click();
}

before(async () => {
  fixture = await startMcpFixture({
    requireHeader: { name: "x-tenant", value: "acme" },
    acceptHeader: { name: "x-user-token", values: [ADMIN_SAMPLE, ALICE_TOKEN, BOB_TOKEN] },
  });
  const access = [{ mcp_client_name: "crm", tools_to_execute: ["*"] }];
  app = await startApp({
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-alice", name: "alice", value: ALICE, mcp_configs: access },
      { id: "vk-bob", name: "bob", value: BOB, mcp_configs: access },
    ]),
  });
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm",
    connection_type: "http",
    connection_string: fixture.httpUrl,
    auth_type: "per_user_headers",
    // A static header named like the per-user key is dropped on the wire (rule 2): the fixture would refuse two values.
    headers: { "x-tenant": { value: "acme" }, "X-User-Token": { value: "static-must-not-be-sent" } },
    per_user_header_keys: ["x-user-token"],
    user_headers: { "x-user-token": ADMIN_SAMPLE },
    tools_to_execute: ["*"],
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  clientId = created.body.client_id;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await app?.stop();
  await fixture?.close();
});

describe("a virtual key's first call", () => {
  test("a per-user call without any identity is an inline 401 saying it requires an identity", async () => {
    const res = await execute({});
    assert.equal(res.status, 401);
    assert.equal(res.body.error.type, "mcp_identity_required");
    assert.match(res.body.error.message, /requires an identity/);
    assert.match(res.body.error.message, /x-gw-mcp-session-id/);
  });

  test("a virtual key without a credential gets mcp_auth_required and the tool does not run upstream", async () => {
    const before = fixture.callCount("echo");
    const res = await execute({ "x-gw-vk": ALICE });
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "mcp_auth_required");
    const payload = res.body.mcp_auth_required;
    assert.equal(payload.kind, "headers");
    assert.match(payload.submit_url, new RegExp(`^${app.url}/workspace/mcp-sessions/auth\\?flow=[A-Za-z0-9_-]{22}&kind=headers$`));
    assert.ok(payload.message.includes(payload.submit_url), "the message embeds the URL");
    assert.equal(res.body.error.message, payload.message);
    assert.equal(payload.mcp_client_id, clientId);
    assert.equal(payload.mcp_client_name, "crm");
    assert.deepEqual(payload.required_header_keys, ["x-user-token"]);
    assert.ok(Date.parse(payload.expires_at) > Date.now());
    assert.equal(fixture.callCount("echo"), before);
  });
});

describe("the submission page in Chromium", () => {
  let url: string;
  let page: Page;

  before(async () => {
    url = (await execute({ "x-gw-vk": ALICE })).body.mcp_auth_required.submit_url;
    aliceFlow = new URL(url).searchParams.get("flow");
    page = await openPage(url);
  });

  test("the page names the server, the identity, one labelled input per header and the admin header names only", async () => {
    assert.equal(await page.locator("#mcp-client").textContent(), "crm");
    assert.match((await page.locator("#identity").textContent()) ?? "", /virtual key .alice./);
    assert.equal(await page.getByLabel("x-user-token").count(), 1);
    const admin = (await page.locator("#admin-headers").textContent()) ?? "";
    assert.match(admin, /x-tenant/);
    const html = await page.content();
    assert.ok(!html.includes("acme") && !html.includes("static-must-not-be-sent"), "admin header values never reach the page");
  });

  test("a wrong value shows the upstream's error and a Retry, and stores nothing", async () => {
    await submitInPage(page, "not-alices-token");
    await page.locator("#error").waitFor({ state: "visible" });
    assert.match((await page.locator("#error-message").textContent()) ?? "", /upstream verify failed/);
    assert.ok(await page.getByRole("button", { name: "Retry" }).isVisible());
    assert.equal((await execute({ "x-gw-vk": ALICE })).status, 401);
  });

  test("Retry with the right value shows the saved confirmation", async () => {
    await page.getByRole("button", { name: "Retry" }).click();
    await submitInPage(page, ALICE_TOKEN);
    await page.locator("#saved").waitFor({ state: "visible" });
    assert.match((await page.locator("#saved").textContent()) ?? "", /saved/i);
    await page.close();
  });

  test("the next tool call runs, and the upstream saw that user's value (never the static one)", async () => {
    const res = await execute({ "x-gw-vk": ALICE }, "from alice");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.content, "from alice");
    assert.equal(lastCallToken(), ALICE_TOKEN);
    assert.equal(fixture.seenHeaders.at(-1)?.["x-tenant"], "acme");
  });

  test("the same key through Authorization: Bearer reuses the credential", async () => {
    const res = await execute({ authorization: `Bearer ${ALICE}` }, "bearer");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(lastCallToken(), ALICE_TOKEN);
  });
});

describe("a second virtual key", () => {
  test("gets its own flow and its own value, and each key keeps using its own", async () => {
    const res = await execute({ "x-api-key": BOB });
    assert.equal(res.status, 401);
    assert.notEqual(new URL(res.body.mcp_auth_required.submit_url).searchParams.get("flow"), aliceFlow);
    const page = await openPage(res.body.mcp_auth_required.submit_url);
    assert.match((await page.locator("#identity").textContent()) ?? "", /virtual key .bob./);
    await submitInPage(page, BOB_TOKEN);
    await page.locator("#saved").waitFor({ state: "visible" });
    await page.close();
    assert.equal((await execute({ "x-api-key": BOB }, "from bob")).status, 200);
    assert.equal(lastCallToken(), BOB_TOKEN);
    assert.equal((await execute({ "x-gw-vk": ALICE }, "alice again")).status, 200);
    assert.equal(lastCallToken(), ALICE_TOKEN);
  });

  test("the sessions listing shows each key its own credential by header name, and no value", async () => {
    const alice = await api(app, "GET", "/api/mcp/sessions", undefined, { "x-gw-vk": ALICE });
    assert.equal(alice.status, 200);
    assert.equal(alice.body.sessions.length, 1);
    const [session] = alice.body.sessions;
    assert.equal(session.mcp_client_id, clientId);
    assert.equal(session.mcp_client_name, "crm");
    assert.equal(session.identity_kind, "vk");
    assert.equal(session.identity, "alice");
    assert.equal(session.status, "active");
    assert.deepEqual(session.header_keys, ["x-user-token"]);
    const all = await api(app, "GET", "/api/mcp/sessions");
    assert.deepEqual(all.body.sessions.map((s: { identity: string }) => s.identity).sort(), ["alice", "bob"]);
    const text = JSON.stringify([alice.body, all.body]);
    for (const secret of [ALICE_TOKEN, BOB_TOKEN, ADMIN_SAMPLE]) assert.ok(!text.includes(secret));
  });
});
