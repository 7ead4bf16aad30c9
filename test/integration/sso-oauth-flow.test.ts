/**
 * A per_user_oauth consent flow opened by an SSO user (IdP bearer token) is bound to that user: only they can
 * start its consent through the Connect endpoint, with the same IdP token; another SSO user is refused.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { startOauthFixture, type OauthFixture } from "../fixtures/oauth-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

let idp: IdpFixture;
let oauth: OauthFixture;
let app: TestApp;

before(async () => {
  idp = await startIdpFixture();
  oauth = await startOauthFixture();
  app = await startApp({ sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID } });
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

test("only the SSO user a consent flow binds can start its consent", async () => {
  const alice = await idp.userToken({ sub: "u-alice", email: "alice@example.com" });
  const needed = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "files-whoami", arguments: "{}" } }, { authorization: `Bearer ${alice}` });
  assert.equal(needed.status, 401, JSON.stringify(needed.body));
  const flow = new URL(needed.body.mcp_auth_required.submit_url).searchParams.get("flow") ?? "";
  const connect = (token: string) => api(app, "POST", `/api/mcp/per-user-oauth/flows/${flow}/connect`, {}, { authorization: `Bearer ${token}` });
  const bob = await connect(await idp.userToken({ sub: "u-bob", email: "bob@example.com" }));
  assert.equal(bob.status, 403, JSON.stringify(bob.body));
  assert.equal(bob.body.error.type, "flow_user_mismatch");
  const own = await connect(alice);
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.match(own.body.authorize_url, /^http/);
});
