/**
 * The read-only status of the response cache and tracing (GetStatus) and the public sign-in options
 * (GetSignInOptions): tracing on shows its endpoint without user info or query and header names without
 * values; off shows off; the sign-in options answer without a session and name SSO only when configured.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SessionService } from "../../gen/gw/admin/v1/session_pb.js";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb.js";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

describe("with tracing and SSO off", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp({ auth: { enabled: true, username: "admin", password: "status-pw", sessionTtlMs: 3_600_000 } });
  });
  after(async () => {
    await app?.stop();
  });

  test("the status says tracing is off and why semantic caching is unavailable", async () => {
    const login = await api(app, "POST", "/api/session/login", { username: "admin", password: "status-pw" });
    const res = await api(app, "GET", "/api/settings/status", undefined, { authorization: `Bearer ${login.body.token}` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.tracing.enabled, false);
    assert.equal(res.body.tracing.endpoint, "");
    assert.equal(res.body.cache.enabled, true);
    assert.equal(res.body.cache.semantic_available, false);
    assert.match(res.body.cache.semantic_problem, /embedding model/);
    assert.equal(res.body.cache.keys_with_cache, 0);
  });

  test("the status needs an admin session", async () => {
    const res = await api(app, "GET", "/api/settings/status");
    assert.equal(res.status, 401);
  });

  test("the sign-in options answer without a session: password only", async () => {
    const res = await api(app, "GET", "/api/session/options");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { password: true, sso: false, sso_login_url: "" });
  });
});

describe("with tracing and SSO on", () => {
  let idp: IdpFixture;
  let app: TestApp;
  before(async () => {
    idp = await startIdpFixture({ accounts: { root: { sub: "root", email: "root@example.com" } } });
    app = await startApp({
      sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET, adminEmails: ["root@example.com"] },
      // Nothing listens on port 1: export fails quietly in the background, which is all this test needs.
      tracing: { url: "http://user:collector-pw@127.0.0.1:1/v1/traces?token=query-secret", headers: { authorization: "Bearer header-secret" }, serviceName: "gw-status", sampler: "parentbased_traceidratio", sampleRatio: 0.25, captureContent: false },
    });
  });
  after(async () => {
    await app?.stop();
    await idp?.close();
  });

  test("the status shows the trace export without its secrets", async () => {
    const res = await api(app, "GET", "/api/settings/status");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.tracing, { enabled: true, endpoint: "http://127.0.0.1:1/v1/traces", header_names: ["authorization"], service_name: "gw-status", sampler: "parentbased_traceidratio", sample_ratio: 0.25, capture_content: false });
    const text = JSON.stringify(res.body);
    for (const secret of ["collector-pw", "query-secret", "header-secret"]) assert.ok(!text.includes(secret), `${secret} leaked`);
  });

  test("the status comes over Connect too", async () => {
    const res = await clientFor(SettingsService, app.url, "connect").getStatus({});
    assert.equal(res.tracing?.sampleRatio, 0.25);
  });

  test("the sign-in options name the SSO login", async () => {
    const res = await clientFor(SessionService, app.url, "connect").getSignInOptions({});
    assert.equal(res.sso, true);
    assert.equal(res.ssoLoginUrl, "/api/sso/login");
    assert.equal(res.password, false);
  });
});
