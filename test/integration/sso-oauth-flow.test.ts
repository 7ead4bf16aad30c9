/**
 * A per_user_oauth consent flow opened by an SSO user (user mode) is bound to that user. Only they can start
 * its consent (the Connect endpoint with their IdP token, the flow's authorize link with their gw_session
 * cookie) and only they can finish it: the callback must reach the gateway signed in as that user. A callback
 * signed in as another user (SSO session or IdP bearer token) is a 403, one signed in as nobody a 401, and
 * neither stores anything nor leaves the state usable. Flows live in the database, so all of this holds when
 * the steps reach different instances.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, startIdpFixture, type IdpFixture, type IdpUserClaims } from "../fixtures/idp-server.js";
import { startOauthFixture, type OauthFixture } from "../fixtures/oauth-server.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { ssoSessionCookie } from "../helpers/sso-session.js";

/** IdP accounts: the account id is the user's subject, the id their per-user credentials are stored under. */
const USERS = {
  alice: { sub: "alice", email: "alice@example.com" },
  bob: { sub: "bob", email: "bob@example.com" },
  carol: { sub: "carol", email: "carol@example.com" },
  dave: { sub: "dave", email: "dave@example.com" },
  erin: { sub: "erin", email: "erin@example.com" },
  frank: { sub: "frank", email: "frank@example.com" },
  grace: { sub: "grace", email: "grace@example.com" },
  olivia: { sub: "olivia", email: "olivia@example.com" },
} satisfies Record<string, IdpUserClaims>;

let idp: IdpFixture;
let oauth: OauthFixture;
let app: TestApp;

before(async () => {
  idp = await startIdpFixture({ accounts: USERS });
  oauth = await startOauthFixture();
  app = await startApp({ sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET } });
  const created = await api(app, "POST", "/api/mcp/client", { name: "files", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "per_user_oauth", tools_to_execute: ["*"] });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.equal((await oauth.approve(created.body.authorize_url, undefined, "admin")).status, 302);
  const done = await api(app, "POST", created.body.complete_url);
  assert.equal(done.status, 200, JSON.stringify(done.body));
});

after(async () => {
  await app?.stop();
  await oauth?.close();
  await idp?.close();
});

async function whoami(user: IdpUserClaims, at: TestApp = app) {
  return api(at, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "files-whoami", arguments: "{}" } }, { authorization: `Bearer ${await idp.userToken(user)}` });
}

/** Opens a user-mode flow: `user`'s call without a token of their own; answers the mcp_auth_required payload. */
async function openFlow(user: IdpUserClaims, at: TestApp = app): Promise<{ session_id: string; authorize_url: string; submit_url: string }> {
  const needed = await whoami(user, at);
  assert.equal(needed.status, 401, JSON.stringify(needed.body));
  assert.equal(needed.body.mcp_auth_required.kind, "oauth");
  return needed.body.mcp_auth_required;
}

/** The authorization server's consent URL of `user`'s flow, as the Connect endpoint answers it to that user. */
async function consentUrl(flowId: string, user: IdpUserClaims): Promise<string> {
  const started = await api(app, "POST", `/api/mcp/per-user-oauth/flows/${flowId}/connect`, {}, { authorization: `Bearer ${await idp.userToken(user)}` });
  assert.equal(started.status, 200, JSON.stringify(started.body));
  assert.equal(new URL(started.body.authorize_url).origin, oauth.issuer);
  return started.body.authorize_url;
}

/** Consents at the authorization server as `account` and brings the callback to the gateway with `headers`. */
async function callback(authorizeUrl: string, account: string, headers: Record<string, string>): Promise<Response> {
  return fetch(await oauth.consentCallback(authorizeUrl, account), { redirect: "manual", headers });
}

/** Asserts that `user` still has no token: their next call asks for consent again. */
async function assertNothingStored(user: IdpUserClaims): Promise<void> {
  const next = await whoami(user);
  assert.equal(next.status, 401, JSON.stringify(next.body));
  assert.equal(next.body.error.type, "mcp_auth_required");
}

describe("per-user OAuth flows of SSO users", () => {
  test("only the SSO user a consent flow binds can start its consent", async () => {
    const flow = await openFlow({ sub: "u-alice", email: "alice@example.com" });
    const connect = (token: string) => api(app, "POST", `/api/mcp/per-user-oauth/flows/${flow.session_id}/connect`, {}, { authorization: `Bearer ${token}` });
    const bob = await connect(await idp.userToken({ sub: "u-bob", email: "bob@example.com" }));
    assert.equal(bob.status, 403, JSON.stringify(bob.body));
    assert.equal(bob.body.error.type, "flow_user_mismatch");
    const own = await connect(await idp.userToken({ sub: "u-alice", email: "alice@example.com" }));
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.match(own.body.authorize_url, /^http/);
  });

  test("refuses a per-user OAuth flow finished by another user signed in with an SSO session", async () => {
    const flow = await openFlow(USERS.alice);
    const bob = await ssoSessionCookie(app.url, "bob");
    const res = await callback(await consentUrl(flow.session_id, USERS.alice), "bob-account", { cookie: bob });
    assert.equal(res.status, 403);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, "flow_user_mismatch");
    assert.match(body.error.message, /alice@example\.com/);
    assert.match(body.error.message, /bob@example\.com/);
    await assertNothingStored(USERS.alice);
  });

  test("refuses a per-user OAuth flow finished with another user's IdP bearer token", async () => {
    const flow = await openFlow(USERS.carol);
    const res = await callback(await consentUrl(flow.session_id, USERS.carol), "bob-account", { authorization: `Bearer ${await idp.userToken(USERS.bob)}` });
    assert.equal(res.status, 403);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, "flow_user_mismatch");
    await assertNothingStored(USERS.carol);
  });

  test("refuses the callback of a user's flow when nobody is signed in, saying to sign in as that user", async () => {
    const flow = await openFlow(USERS.frank);
    const res = await callback(await consentUrl(flow.session_id, USERS.frank), "mallory-account", {});
    assert.equal(res.status, 401);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, "flow_user_mismatch");
    assert.match(body.error.message, /binds a credential to user "frank@example\.com": sign in as that user/);
    await assertNothingStored(USERS.frank);
  });

  test("a callback refused for another user spends its state: the bound user cannot be handed it afterwards", async () => {
    const flow = await openFlow(USERS.grace);
    const url = await oauth.consentCallback(await consentUrl(flow.session_id, USERS.grace), "bob-account");
    const refused = await fetch(url, { redirect: "manual", headers: { cookie: await ssoSessionCookie(app.url, "bob") } });
    assert.equal(refused.status, 403);
    await refused.text();
    const replayed = await fetch(url, { redirect: "manual", headers: { cookie: await ssoSessionCookie(app.url, "grace") } });
    assert.equal(replayed.status, 400);
    await replayed.text();
    await assertNothingStored(USERS.grace);
  });

  test("the user who opened a flow finishes it from a browser signed in as that user", async () => {
    const flow = await openFlow(USERS.dave);
    const res = await callback(await consentUrl(flow.session_id, USERS.dave), "dave-account", { cookie: await ssoSessionCookie(app.url, "dave") });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("location"), `/workspace/mcp-sessions/auth?flow=${flow.session_id}&kind=oauth`);
    const call = await whoami(USERS.dave);
    assert.equal(call.status, 200, JSON.stringify(call.body));
    assert.equal(call.body.content, "subject dave-account");
  });
});

describe("the authorize link of a user-mode flow", () => {
  test("is a link to the gateway, never the authorization server's URL with the flow's state", async () => {
    const flow = await openFlow({ sub: "link-owner" });
    const link = new URL(flow.authorize_url);
    assert.equal(link.origin, app.url);
    assert.equal(link.searchParams.get("flow"), flow.session_id);
    assert.equal(link.searchParams.get("state"), null);
  });

  test("refuses a browser signed in as another user", async () => {
    const flow = await openFlow({ sub: "link-refused", email: "victim@example.com" });
    const res = await fetch(flow.authorize_url, { redirect: "manual", headers: { cookie: await ssoSessionCookie(app.url, "bob") } });
    assert.equal(res.status, 403);
    assert.match(await res.text(), /binds a credential to user “victim@example\.com”/);
  });

  test("sends a browser that is not signed in to the SSO login, with the link as return_to", async () => {
    const flow = await openFlow({ sub: "link-anonymous" });
    const res = await fetch(flow.authorize_url, { redirect: "manual" });
    assert.equal(res.status, 302);
    const location = new URL(res.headers.get("location") ?? "", app.url);
    assert.equal(location.pathname, "/api/sso/login");
    const link = new URL(flow.authorize_url);
    assert.equal(location.searchParams.get("return_to"), link.pathname + link.search);
  });

  test("takes the bound user's browser to the consent, and their callback stores their token", async () => {
    const flow = await openFlow(USERS.erin);
    const cookie = await ssoSessionCookie(app.url, "erin");
    const res = await fetch(flow.authorize_url, { redirect: "manual", headers: { cookie } });
    assert.equal(res.status, 302);
    const consent = res.headers.get("location") ?? "";
    assert.equal(new URL(consent).origin, oauth.issuer);
    const done = await callback(consent, "erin-account", { cookie });
    assert.equal(done.status, 302);
    const call = await whoami(USERS.erin);
    assert.equal(call.status, 200, JSON.stringify(call.body));
    assert.equal(call.body.content, "subject erin-account");
  });
});

describe("per-user OAuth flows of SSO users on two instances sharing one PostgreSQL database", () => {
  /** Polls `attempt` until it answers something (generous bound: changes reach the other instance by notification). */
  async function eventually<T>(what: string, attempt: () => Promise<T | undefined>): Promise<T> {
    const end = Date.now() + 20_000;
    for (;;) {
      const got = await attempt();
      if (got !== undefined) return got;
      if (Date.now() > end) throw new Error(`${what}: not within 20 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  test(
    "a flow opened on one instance is started through the other and finished, signed in as its user, on the first",
    { skip: testDatabaseUrl ? false : "needs GW_TEST_DATABASE_URL (the embedded database serves one instance)" },
    async () => {
      // The same schema and data directory (its encryption key) on another port: a second node of one deployment.
      const second = await startApp({ ...app.restartOptions, port: 0 });
      try {
        await second.runtime.firstConnectionsDone();
        const flow = await openFlow(USERS.olivia, second);
        assert.equal(new URL(flow.authorize_url).origin, second.url);
        // Signed in through the first instance; the second knows the session once its notification arrives.
        const cookie = await ssoSessionCookie(app.url, "olivia");
        const consent = await eventually("the authorize link on the second instance to take the first's session", async () => {
          const res = await fetch(flow.authorize_url, { redirect: "manual", headers: { cookie } });
          await res.text();
          const location = res.headers.get("location") ?? "";
          return res.status === 302 && location.startsWith(oauth.issuer) ? location : undefined;
        });
        const done = await callback(consent, "olivia-account", { cookie });
        assert.equal(done.status, 302, "the first instance took the callback of a flow the second opened and started");
        const call = await eventually("olivia's token to serve on the second instance", async () => {
          const res = await whoami(USERS.olivia, second);
          return res.status === 200 ? res : undefined;
        });
        assert.equal(call.body.content, "subject olivia-account");
      } finally {
        await second.stop({ keepData: true });
      }
    },
  );
});
