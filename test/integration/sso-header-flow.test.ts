/**
 * Header submission flows of SSO users (user mode), over plain HTTP: a flow is bound to the user whose call
 * opened it, and only a submission signed in as that user (gw_session cookie or IdP bearer token) stores
 * anything. Another signed-in user is a 403 on the API and on the flow page, nobody signed in a 401 (the
 * page sends that browser to the SSO login instead).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, startIdpFixture, type IdpFixture, type IdpUserClaims } from "../fixtures/idp-server.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { ssoSessionCookie } from "../helpers/sso-session.js";

const USERS = {
  bob: { sub: "bob", email: "bob@example.com" },
  kate: { sub: "kate", email: "kate@example.com" },
} satisfies Record<string, IdpUserClaims>;

let idp: IdpFixture;
let mcp: McpFixture;
let app: TestApp;

before(async () => {
  idp = await startIdpFixture({ accounts: USERS });
  mcp = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["sample", "own-secret"] } });
  app = await startApp({ sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET } });
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm", connection_type: "http", connection_string: mcp.httpUrl, auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "sample" }, tools_to_execute: ["*"],
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
});

after(async () => {
  await app?.stop();
  await mcp?.close();
  await idp?.close();
});

async function execute(user: IdpUserClaims) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: "{\"text\":\"x\"}" } }, { authorization: `Bearer ${await idp.userToken(user)}` });
}

/** Opens a user-mode flow: `user`'s call without a credential; answers the flow's link. */
async function openFlow(user: IdpUserClaims): Promise<URL> {
  const opened = await execute(user);
  assert.equal(opened.status, 401, JSON.stringify(opened.body));
  const link = new URL(opened.body.mcp_auth_required.submit_url);
  assert.equal(link.hash, "", "a user-mode link carries no temp token");
  return link;
}

/** Opens a flow for `user` and submits values to it with `headers`. */
async function submitTo(user: IdpUserClaims, headers: Record<string, string>) {
  const flow = (await openFlow(user)).searchParams.get("flow") ?? "";
  return api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": "own-secret" } }, headers);
}

/** Asserts that `user` still has no credential: their next call opens a flow again. */
async function assertNothingStored(user: IdpUserClaims): Promise<void> {
  const next = await execute(user);
  assert.equal(next.status, 401, JSON.stringify(next.body));
  assert.equal(next.body.error.type, "mcp_auth_required");
}

describe("header submissions to a user-mode flow", () => {
  test("refuses a header submission from a browser signed in as another user", async () => {
    const owner = { sub: "hank", email: "hank@example.com" };
    const res = await submitTo(owner, { cookie: await ssoSessionCookie(app.url, "bob") });
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "flow_user_mismatch");
    assert.match(res.body.error.message, /hank@example\.com/);
    await assertNothingStored(owner);
  });

  test("refuses a header submission carrying another user's IdP bearer token", async () => {
    const owner = { sub: "ivan", email: "ivan@example.com" };
    const res = await submitTo(owner, { authorization: `Bearer ${await idp.userToken(USERS.bob)}` });
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "flow_user_mismatch");
    await assertNothingStored(owner);
  });

  test("refuses a header submission to a user's flow when nobody is signed in, saying to sign in as that user", async () => {
    const owner = { sub: "judy", email: "judy@example.com" };
    const res = await submitTo(owner, {});
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "flow_user_mismatch");
    assert.match(res.body.error.message, /sign in as that user/);
    await assertNothingStored(owner);
  });

  test("the bound user's submission through their SSO session stores their credential", async () => {
    const link = await openFlow(USERS.kate);
    const res = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${link.searchParams.get("flow") ?? ""}`, { headers: { "x-user-token": "own-secret" } }, { cookie: await ssoSessionCookie(app.url, "kate") });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const call = await execute(USERS.kate);
    assert.equal(call.status, 200, JSON.stringify(call.body));
  });
});

describe("the flow page of a user-mode header flow", () => {
  test("refuses a browser signed in as another user, naming both users", async () => {
    const link = await openFlow({ sub: "lena", email: "lena@example.com" });
    const res = await fetch(link, { redirect: "manual", headers: { cookie: await ssoSessionCookie(app.url, "bob") } });
    assert.equal(res.status, 403);
    const html = await res.text();
    assert.match(html, /binds a credential to user “lena@example\.com”/);
    assert.match(html, /signed in as “bob@example\.com”/);
    assert.doesNotMatch(html, /id="submit-form"/);
  });

  test("sends a browser that is not signed in to the SSO login, with the page as return_to", async () => {
    const link = await openFlow({ sub: "mona" });
    const res = await fetch(link, { redirect: "manual" });
    assert.equal(res.status, 302);
    const location = new URL(res.headers.get("location") ?? "", app.url);
    assert.equal(location.pathname, "/api/sso/login");
    assert.equal(location.searchParams.get("return_to"), link.pathname + link.search);
  });
});
