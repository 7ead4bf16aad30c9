/**
 * per_user_oauth against a real authorization server (oidc-provider) protecting a real MCP server: the
 * admin's consent is the admin discovery credential (tool sync only); each caller identity gets
 * mcp_auth_required (kind oauth) until it consents, and then the upstream sees that identity's own token;
 * a flow is bound to the identity that opened it; an expired flow answers 410; a refused refresh sends
 * the credential to needs_update and the next call asks for consent again; revoke reaches the
 * authorization server.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { startOauthFixture, type OauthFixture } from "../fixtures/oauth-server.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

const ALICE = "sk-gw-alice-oauth";
const BOB = "sk-gw-bob-oauth";

function keys() {
  const access = [{ mcp_client_name: "files", tools_to_execute: ["*"] }];
  return inferenceOptionsFromFile({}, [
    { id: "vk-alice", name: "alice", value: ALICE, mcp_configs: access },
    { id: "vk-bob", name: "bob", value: BOB, mcp_configs: access },
  ]);
}

/** Polls `condition` until it holds (generous bound: the machine may be loaded). */
async function until(condition: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function whoami(app: TestApp, headers: Record<string, string>) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "files-whoami", arguments: "{}" } }, headers);
}

/** Creates the per_user_oauth client "files" and completes the admin's consent (as account "admin"); returns its id. */
async function createClient(app: TestApp, oauth: OauthFixture): Promise<string> {
  return (await createWithConsent(app, oauth)).client_id;
}

/** Creates the per_user_oauth client "files" and completes the admin's consent; returns the pending_oauth answer. */
async function createWithConsent(app: TestApp, oauth: OauthFixture) {
  const created = await api(app, "POST", "/api/mcp/client", { name: "files", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "per_user_oauth", tools_to_execute: ["*"] });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.equal(created.body.status, "pending_oauth");
  assert.equal((await oauth.approve(created.body.authorize_url, undefined, "admin")).status, 302);
  const done = await api(app, "POST", created.body.complete_url);
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.equal(done.body.tools_count, 1);
  return created.body;
}

/** Calls as `vk` until consent is needed, consents as `account`, and returns the auth-required payload. */
async function consent(app: TestApp, oauth: OauthFixture, vk: string, account: string) {
  const needed = await whoami(app, { "x-gw-vk": vk });
  assert.equal(needed.status, 401, JSON.stringify(needed.body));
  const payload = needed.body.mcp_auth_required;
  const callback = await oauth.approve(payload.authorize_url, undefined, account);
  assert.equal(callback.status, 302);
  return { payload, location: callback.headers.get("location") ?? "" };
}

describe("per_user_oauth with two virtual keys", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  let clientId = "";
  let now = Date.now();
  before(async () => {
    app = await startApp({ inference: keys(), mcpTiming: { now: () => now } });
    oauth = await startOauthFixture();
    clientId = await createClient(app, oauth);
  });
  after(async () => {
    await app?.stop();
    await oauth?.close();
  });

  test("creation runs the admin consent; the client is healthy with the tools the admin's token listed", async () => {
    const client = (await api(app, "GET", `/api/mcp/client/${clientId}`)).body.client;
    assert.equal(client.auth_type, "per_user_oauth");
    assert.equal(client.state, "healthy");
    assert.deepEqual(client.tools.map((t: { name: string }) => t.name), ["whoami"]);
  });

  test("a caller without an identity gets mcp_identity_required", async () => {
    const res = await whoami(app, {});
    assert.equal(res.status, 401);
    assert.equal(res.body.error.type, "mcp_identity_required");
  });

  test("a caller without a token gets mcp_auth_required with kind oauth, and the admin's token is never used for it", async () => {
    const seen = oauth.acceptedTokens.length;
    const res = await whoami(app, { "x-gw-vk": ALICE });
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "mcp_auth_required");
    const payload = res.body.mcp_auth_required;
    assert.deepEqual(Object.keys(payload).sort(), ["authorize_url", "expires_at", "kind", "mcp_client_id", "mcp_client_name", "message", "session_id", "submit_url"]);
    assert.equal(payload.kind, "oauth");
    assert.equal(payload.mcp_client_id, clientId);
    assert.equal(payload.mcp_client_name, "files");
    assert.equal(payload.submit_url, `${app.url}/workspace/mcp-sessions/auth?flow=${payload.session_id}&kind=oauth`);
    assert.ok(payload.message.includes(payload.submit_url));
    const authorize = new URL(payload.authorize_url);
    assert.equal(authorize.origin, oauth.issuer);
    assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
    assert.equal(authorize.searchParams.get("resource"), oauth.mcpUrl);
    assert.equal(authorize.searchParams.get("redirect_uri"), `${app.url}/api/oauth/callback`);
    assert.ok(Date.parse(payload.expires_at) > now);
    assert.equal(oauth.acceptedTokens.length, seen, "the upstream saw a token for a caller without one");
    // One flow per (client, identity): asking again hands out the same flow.
    const again = await whoami(app, { "x-gw-vk": ALICE });
    assert.equal(again.body.mcp_auth_required.session_id, payload.session_id);
  });

  test("two identities consent separately and the upstream sees each one's own subject", async () => {
    const alice = await consent(app, oauth, ALICE, "alice-account");
    assert.equal(alice.location, `/workspace/mcp-sessions/auth?flow=${alice.payload.session_id}&kind=oauth`);
    const aliceCall = await whoami(app, { "x-gw-vk": ALICE });
    assert.equal(aliceCall.status, 200, JSON.stringify(aliceCall.body));
    assert.equal(aliceCall.body.content, "subject alice-account");
    assert.equal((await whoami(app, { "x-gw-vk": BOB })).status, 401);
    await consent(app, oauth, BOB, "bob-account");
    assert.equal((await whoami(app, { "x-gw-vk": BOB })).body.content, "subject bob-account");
    assert.equal((await whoami(app, { "x-gw-vk": ALICE })).body.content, "subject alice-account");
  });

  test("the flow page shows the result of the consent", async () => {
    const res = await whoami(app, { "x-gw-mcp-session-id": "page-session" });
    const payload = res.body.mcp_auth_required;
    const pending = await (await fetch(payload.submit_url)).text();
    assert.match(pending, /id="connect"/);
    assert.match(pending, /session “page-session”/);
    const callback = await oauth.approve(payload.authorize_url, undefined, "carol");
    const done = await fetch(`${app.url}${callback.headers.get("location") ?? ""}`);
    assert.equal(done.status, 200);
    assert.match(await done.text(), /id="oauth-connected"/);
  });

  test("a replayed callback is refused and binds nothing", async () => {
    const res = await whoami(app, { "x-gw-mcp-session-id": "replay-session" });
    let callbackUrl = "";
    await oauth.approve(res.body.mcp_auth_required.authorize_url, (url) => {
      callbackUrl = url;
    }, "dave");
    const again = await fetch(callbackUrl, { redirect: "manual" });
    assert.equal(again.status, 400);
    assert.equal((await whoami(app, { "x-gw-mcp-session-id": "replay-session" })).body.content, "subject dave");
  });

  test("a denied consent shows the authorization server's error on the page and stores nothing", async () => {
    const res = await whoami(app, { "x-gw-mcp-session-id": "deny-session" });
    const callback = await oauth.deny(res.body.mcp_auth_required.authorize_url);
    const html = await (await fetch(`${app.url}${callback.headers.get("location") ?? ""}`)).text();
    assert.match(html, /id="oauth-failed"/);
    assert.match(html, /access_denied/);
    assert.equal((await whoami(app, { "x-gw-mcp-session-id": "deny-session" })).status, 401);
  });

  test("sessions list the OAuth credentials without their tokens, and revoke reaches the authorization server", async () => {
    const listed = await api(app, "GET", "/api/mcp/sessions", undefined, { "x-gw-vk": BOB });
    assert.equal(listed.status, 200);
    assert.equal(listed.body.sessions.length, 1);
    const bob = listed.body.sessions[0];
    assert.deepEqual({ ...bob, credential_id: undefined, updated_at: undefined }, {
      credential_id: undefined, updated_at: undefined, mcp_client_id: clientId, mcp_client_name: "files", identity_kind: "vk", identity: "bob", status: "active", header_keys: [],
    });
    const all = await api(app, "GET", "/api/mcp/sessions");
    assert.ok(!JSON.stringify(all.body).includes(oauth.acceptedTokens.at(-1) ?? "-"));
    const before = oauth.revocations;
    const revoked = await clientFor(CredentialService, app.url, "connect").revokeSession({ credentialId: bob.credential_id }, { headers: { "x-gw-vk": BOB } });
    assert.equal(revoked.status, "success");
    assert.ok(oauth.revocations > before);
    assert.equal((await whoami(app, { "x-gw-vk": BOB })).status, 401);
  });

  test("a refresh the authorization server refuses sends the credential to needs_update and the next call asks for consent", async () => {
    const credential = (await api(app, "GET", "/api/mcp/sessions", undefined, { "x-gw-vk": ALICE })).body.sessions[0];
    oauth.dropRefreshTokens();
    now += 3600_000;
    const failed = await whoami(app, { "x-gw-vk": ALICE });
    assert.equal(failed.status, 401, JSON.stringify(failed.body));
    assert.equal(failed.body.mcp_auth_required.kind, "oauth");
    const listed = (await api(app, "GET", "/api/mcp/sessions", undefined, { "x-gw-vk": ALICE })).body.sessions[0];
    assert.equal(listed.credential_id, credential.credential_id);
    assert.equal(listed.status, "needs_update");
    assert.ok(oauth.tokenRequests.includes("refresh_token:error"));
    const callback = await oauth.approve(failed.body.mcp_auth_required.authorize_url, undefined, "alice-account");
    assert.equal(callback.status, 302);
    assert.equal((await whoami(app, { "x-gw-vk": ALICE })).body.content, "subject alice-account");
  });

  test("a flow left for 15 minutes expires: its callback answers 410", async () => {
    const res = await whoami(app, { "x-gw-mcp-session-id": "late-session" });
    now += 16 * 60_000;
    const callback = await oauth.approve(res.body.mcp_auth_required.authorize_url, undefined, "erin");
    assert.equal(callback.status, 410);
    assert.match(await callback.text(), /expired/);
    assert.equal((await whoami(app, { "x-gw-mcp-session-id": "late-session" })).status, 401);
  });

  test("no token, code or verifier reaches the log", async () => {
    const log = app.logLines.join("\n");
    for (const token of oauth.acceptedTokens) assert.ok(!log.includes(token), "an access token was logged");
    assert.doesNotMatch(log, /code_verifier|refresh_token"\s*:\s*"[^"]/);
  });
});

describe("per_user_oauth refresh", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  let now = Date.now();
  before(async () => {
    app = await startApp({ inference: keys(), mcpTiming: { now: () => now } });
    oauth = await startOauthFixture({ whoamiReadOnly: true });
    await createClient(app, oauth);
    await consent(app, oauth, ALICE, "alice-account");
  });
  after(async () => {
    await app?.stop();
    await oauth?.close();
  });

  test("a token is refreshed a minute before it expires", async () => {
    const used = oauth.acceptedTokens.at(-1);
    now += 3600_000 - 30_000;
    const call = await whoami(app, { "x-gw-vk": ALICE });
    assert.equal(call.body.content, "subject alice-account");
    assert.ok(oauth.tokenRequests.includes("refresh_token"));
    assert.notEqual(oauth.acceptedTokens.at(-1), used);
  });

  test("a rejected token of a read-only tool is refreshed once and the call retried", async () => {
    const refreshes = oauth.tokenRequests.filter((g) => g === "refresh_token").length;
    oauth.rejectSeenTokens();
    const calls = await Promise.all([whoami(app, { "x-gw-vk": ALICE }), whoami(app, { "x-gw-vk": ALICE })]);
    for (const call of calls) assert.equal(call.body.content, "subject alice-account", JSON.stringify(call.body));
    assert.equal(oauth.tokenRequests.filter((g) => g === "refresh_token").length, refreshes + 1);
  });
});

describe("per_user_oauth without retry hints", () => {
  const { app, oauth } = ((): { app: () => TestApp; oauth: () => OauthFixture } => {
    let a: TestApp | undefined;
    let o: OauthFixture | undefined;
    before(async () => {
      a = await startApp({ inference: keys() });
      o = await startOauthFixture();
      await createClient(a, o);
      await consent(a, o, ALICE, "alice-account");
    });
    after(async () => {
      await a?.stop();
      await o?.close();
    });
    return { app: () => a as TestApp, oauth: () => o as OauthFixture };
  })();

  test("a rejected token fails the call closed, refreshed for the next call", async () => {
    assert.equal((await whoami(app(), { "x-gw-vk": ALICE })).body.content, "subject alice-account");
    oauth().rejectSeenTokens();
    const failed = await whoami(app(), { "x-gw-vk": ALICE });
    assert.equal(failed.status, 200);
    assert.match(failed.body.content, /^Error: tool files-whoami failed: .*rejected your OAuth token/);
    assert.ok(oauth().tokenRequests.includes("refresh_token"));
    assert.equal((await whoami(app(), { "x-gw-vk": ALICE })).body.content, "subject alice-account");
  });

  test("a virtual key losing access orphans its OAuth credential, and regaining it makes it active again", async () => {
    const status = async () => (await api(app(), "GET", "/api/mcp/sessions", undefined, { "x-gw-vk": ALICE })).body.sessions[0]?.status;
    assert.equal((await api(app(), "PUT", "/api/governance/virtual-keys/vk-alice", { mcp_configs: [] })).status, 200);
    assert.equal(await status(), "orphaned");
    assert.equal((await whoami(app(), { "x-gw-vk": ALICE })).status, 403);
    assert.equal((await api(app(), "PUT", "/api/governance/virtual-keys/vk-alice", { mcp_configs: [{ mcp_client_name: "files", tools_to_execute: ["*"] }] })).status, 200);
    assert.equal(await status(), "active");
    assert.equal((await whoami(app(), { "x-gw-vk": ALICE })).body.content, "subject alice-account");
  });
});

describe("per_user_oauth flows with temp tokens", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  before(async () => {
    app = await startApp({ client: { ...DEFAULT_CLIENT, mcpEnableTempTokenAuth: true } });
    oauth = await startOauthFixture();
    await createClient(app, oauth);
  });
  after(async () => {
    await app?.stop();
    await oauth?.close();
  });

  function flowOf(session: string) {
    return whoami(app, { "x-gw-mcp-session-id": session }).then((res) => {
      const payload = res.body.mcp_auth_required;
      return { id: payload.session_id as string, token: new URL(payload.submit_url).hash.replace(/^#t=/, ""), authorizeUrl: payload.authorize_url as string };
    });
  }

  test("Connect answers the authorization URL to the flow's own temp token (REST and Connect)", async () => {
    const flow = await flowOf("s-one");
    assert.ok(flow.token.length > 20);
    const rest = await api(app, "POST", `/api/mcp/per-user-oauth/flows/${flow.id}/connect`, {}, { "x-gw-temp-token": flow.token });
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    assert.equal(rest.body.authorize_url, flow.authorizeUrl);
    const rpc = await clientFor(CredentialService, app.url, "connect").connectOauthFlow({ flowId: flow.id }, { headers: { "x-gw-temp-token": flow.token } });
    assert.equal(rpc.authorizeUrl, flow.authorizeUrl);
  });

  test("another identity cannot start a flow: its temp token is refused", async () => {
    const mine = await flowOf("s-two");
    const theirs = await flowOf("s-three");
    const refused = await api(app, "POST", `/api/mcp/per-user-oauth/flows/${mine.id}/connect`, {}, { "x-gw-temp-token": theirs.token });
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.type, "temp_token_invalid");
    const none = await api(app, "POST", `/api/mcp/per-user-oauth/flows/${mine.id}/connect`, {});
    assert.equal(none.status, 401);
  });

  test("the callback binds the token to the identity that opened the flow only", async () => {
    const mine = await flowOf("s-four");
    await flowOf("s-five");
    assert.equal((await oauth.approve(mine.authorizeUrl, undefined, "frank")).status, 302);
    assert.equal((await whoami(app, { "x-gw-mcp-session-id": "s-four" })).body.content, "subject frank");
    assert.equal((await whoami(app, { "x-gw-mcp-session-id": "s-five" })).status, 401);
  });

  test("a header submission to an OAuth flow is refused", async () => {
    const flow = await flowOf("s-six");
    const res = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow.id}`, { headers: { "x-a": "b" } }, { "x-gw-temp-token": flow.token });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "flow_kind_mismatch");
  });
});

describe("per_user_oauth flows of the gateway's admin, signed in with the password", () => {
  const PASSWORD = "admin-password-1";
  let app: TestApp;
  let oauth: OauthFixture;
  let session = "";
  const asAdmin = () => ({ authorization: `Bearer ${session}` });
  before(async () => {
    app = await startApp({ auth: { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 } });
    oauth = await startOauthFixture();
    session = String((await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD })).body.token);
    const created = await api(app, "POST", "/api/mcp/client", { name: "files", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "per_user_oauth", tools_to_execute: ["*"] }, asAdmin());
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal((await oauth.approve(created.body.authorize_url, undefined, "admin")).status, 302);
    assert.equal((await api(app, "POST", created.body.complete_url, undefined, asAdmin())).status, 200);
  });
  after(async () => {
    await app?.stop();
    await oauth?.close();
  });

  /** The admin's own call: a user flow bound to "admin"; answers its payload. */
  async function adminFlow() {
    const needed = await whoami(app, asAdmin());
    assert.equal(needed.status, 401, JSON.stringify(needed.body));
    assert.equal(needed.body.mcp_auth_required.kind, "oauth");
    return needed.body.mcp_auth_required as { session_id: string; submit_url: string };
  }

  /** The consent URL the Connect step answers to the admin's sign-in, with any browser cookie `headers` carry. */
  async function connect(flowId: string, headers: Record<string, string> = {}): Promise<string> {
    const started = await api(app, "POST", `/api/mcp/per-user-oauth/flows/${flowId}/connect`, {}, { ...asAdmin(), ...headers });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    return String(started.body.authorize_url);
  }

  test("refuses the admin's own flow at a callback from a browser that never connected as the admin", async () => {
    const flow = await adminFlow();
    const res = await oauth.approve(await connect(flow.session_id), undefined, "mallory");
    assert.equal(res.status, 401);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, "flow_user_mismatch");
    assert.match(body.error.message, /binds a credential to user "admin": sign in as that user/);
    assert.equal((await whoami(app, asAdmin())).status, 401);
  });

  test("the admin's own flow completes in the browser whose page connected after the password sign-in", async () => {
    const flow = await adminFlow();
    const page = await fetch(flow.submit_url);
    assert.equal(page.status, 200);
    await page.text();
    const browser = page.headers.getSetCookie().map((line) => line.split(";")[0] ?? "").find((pair) => pair.startsWith("gw_flow_browser="));
    assert.ok(browser, "the flow page gives the browser its flow cookie");
    const url = await oauth.consentCallback(await connect(flow.session_id, { cookie: browser }), "admin-own");
    const res = await fetch(url, { redirect: "manual", headers: { cookie: browser } });
    assert.equal(res.status, 302);
    const call = await whoami(app, asAdmin());
    assert.equal(call.status, 200, JSON.stringify(call.body));
    assert.equal(call.body.content, "subject admin-own");
  });

  test(
    "the browser the admin connected from through one instance finishes the flow on another",
    { skip: testDatabaseUrl ? false : "needs GW_TEST_DATABASE_URL (the embedded database serves one instance)" },
    async () => {
      // A fresh flow: the admin's credential from the test above (if any) goes first.
      const sessions = await api(app, "GET", "/api/mcp/sessions", undefined, asAdmin());
      for (const s of sessions.body.sessions as { credential_id: string }[]) await api(app, "DELETE", `/api/mcp/sessions/${s.credential_id}`, undefined, asAdmin());
      const second = await startApp(app.restartOptions);
      try {
        await second.runtime.firstConnectionsDone();
        let needed = await whoami(second, asAdmin());
        // The revoke reaches the second instance by notification.
        await until(async () => {
          needed = await whoami(second, asAdmin());
          return needed.body?.mcp_auth_required?.kind === "oauth";
        });
        const flow = needed.body.mcp_auth_required as { session_id: string; submit_url: string };
        const page = await fetch(flow.submit_url);
        await page.text();
        const browser = page.headers.getSetCookie().map((line) => line.split(";")[0] ?? "").find((pair) => pair.startsWith("gw_flow_browser="));
        assert.ok(browser, "the second instance's page gives the browser its flow cookie");
        const started = await api(second, "POST", `/api/mcp/per-user-oauth/flows/${flow.session_id}/connect`, {}, { ...asAdmin(), cookie: browser });
        assert.equal(started.status, 200, JSON.stringify(started.body));
        const url = await oauth.consentCallback(String(started.body.authorize_url), "admin-elsewhere");
        assert.equal(new URL(url).origin, app.url, "the authorization server returns to the first instance");
        const res = await fetch(url, { redirect: "manual", headers: { cookie: browser } });
        assert.equal(res.status, 302);
        assert.equal((await whoami(app, asAdmin())).body.content, "subject admin-elsewhere");
      } finally {
        await second.stop({ keepData: true });
      }
    },
  );
});

describe("per_user_oauth admin discovery credential", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  before(async () => {
    app = await startApp({ inference: keys() });
    oauth = await startOauthFixture();
  });
  after(async () => {
    await app?.stop();
    await oauth?.close();
  });

  test("a revoked admin credential reads needs_reauth while callers keep calling, and reauthorize renews it", async () => {
    const created = await createWithConsent(app, oauth);
    await consent(app, oauth, ALICE, "alice-account");
    const revoked = await api(app, "DELETE", `/api/oauth/config/${created.oauth_config_id}`);
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    // The repair mark is recorded in the background: poll for the projection.
    await until(async () => (await api(app, "GET", `/api/mcp/client/${created.client_id}`)).body.client.state === "needs_reauth");
    assert.equal((await whoami(app, { "x-gw-vk": ALICE })).body.content, "subject alice-account");

    const again = await api(app, "POST", `/api/mcp/client/${created.client_id}/reauthorize`);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.status, "pending_oauth");
    await oauth.approve(again.body.authorize_url, undefined, "admin");
    assert.equal((await api(app, "POST", again.body.complete_url)).status, 200);
    assert.equal((await api(app, "GET", `/api/mcp/client/${created.client_id}`)).body.client.state, "healthy");
    assert.equal((await whoami(app, { "x-gw-vk": ALICE })).body.content, "subject alice-account");
    // A new caller consents with the renewed registration.
    await consent(app, oauth, BOB, "bob-account");
    assert.equal((await whoami(app, { "x-gw-vk": BOB })).body.content, "subject bob-account");
  });

  test("initiate-verification applies to per_user_oauth and refuses a verified client", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "pending", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "per_user_oauth" });
    assert.equal((await api(app, "GET", `/api/mcp/client/${created.body.client_id}`)).body.client.state, "pending_verification");
    const fresh = await api(app, "POST", `/api/mcp/client/${created.body.client_id}/initiate-verification`);
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    await oauth.approve(fresh.body.authorize_url, undefined, "admin");
    assert.equal((await api(app, "POST", fresh.body.complete_url)).status, 200);
    assert.equal((await api(app, "POST", `/api/mcp/client/${created.body.client_id}/initiate-verification`)).status, 409);
  });
});

describe("per_user_oauth on two instances sharing one PostgreSQL database", () => {
  test("a rejected caller token is refreshed once between them: the second adopts the first's token", { skip: testDatabaseUrl ? false : "needs GW_TEST_DATABASE_URL (the embedded database serves one instance)" }, async () => {
    const oauth = await startOauthFixture({ whoamiReadOnly: true });
    const first = await startApp({ inference: keys() });
    let second: TestApp | undefined;
    try {
      await createClient(first, oauth);
      await consent(first, oauth, ALICE, "alice-account");
      assert.equal((await whoami(first, { "x-gw-vk": ALICE })).body.content, "subject alice-account");
      // The same schema and the same data directory (its encryption key): a second node of one deployment.
      second = await startApp(first.restartOptions);
      await second.runtime.firstConnectionsDone();
      const before = oauth.tokenRequests.filter((g) => g === "refresh_token").length;
      oauth.rejectSeenTokens();
      const [a, b] = await Promise.all([whoami(first, { "x-gw-vk": ALICE }), whoami(second, { "x-gw-vk": ALICE })]);
      assert.equal(a.body.content, "subject alice-account", JSON.stringify(a.body));
      assert.equal(b.body.content, "subject alice-account", JSON.stringify(b.body));
      assert.equal(oauth.tokenRequests.filter((g) => g === "refresh_token").length, before + 1);
    } finally {
      await second?.stop({ keepData: true });
      await first.stop();
      await oauth.close();
    }
  });
});

describe("per_user_oauth across a restart", () => {
  test("a caller's token and the client's registration survive a restart: the next call and a refresh work", async () => {
    const oauth = await startOauthFixture();
    let now = Date.now();
    let app = await startApp({ inference: keys(), mcpTiming: { now: () => now } });
    try {
      await createClient(app, oauth);
      await consent(app, oauth, ALICE, "alice-account");
      await app.stop({ keepData: true });
      app = await startApp(app.restartOptions);
      await app.runtime.firstConnectionsDone();
      assert.equal((await whoami(app, { "x-gw-vk": ALICE })).body.content, "subject alice-account");
      now += 3600_000;
      const refreshes = oauth.tokenRequests.filter((g) => g === "refresh_token").length;
      assert.equal((await whoami(app, { "x-gw-vk": ALICE })).body.content, "subject alice-account");
      assert.ok(oauth.tokenRequests.filter((g) => g === "refresh_token").length > refreshes);
    } finally {
      await app.stop();
      await oauth.close();
    }
  });
});
