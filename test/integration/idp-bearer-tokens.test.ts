/**
 * IdP bearer tokens: an access token of the configured SSO issuer, verified against the issuer's JWKS, is
 * the caller's `user` identity on the tool-execute path, /v1 and the admin API; bad tokens of every kind
 * get a clear 401 and never reach a log line; virtual keys in the same header keep working; the JWKS
 * rotating mid-run is picked up without a restart.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SignJWT } from "jose";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { GATEWAY_CLIENT_ID, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const PASSWORD = "admin-password-1";
const ALICE_KEY = "sk-gw-alice";

let idp: IdpFixture;
let mcp: McpFixture;
let app: TestApp;
let session: string;

const ALICE = { sub: "u-alice", email: "alice@example.com" };
const ADMIN = { sub: "u-root", email: "Root@Example.com" };

function execute(headers: Record<string, string>) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: "{\"text\":\"x\"}" } }, headers);
}

function chat(token: string) {
  return api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, { authorization: `Bearer ${token}` });
}

before(async () => {
  idp = await startIdpFixture();
  mcp = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["sample"] } });
  app = await startApp({
    auth: { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 },
    sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, adminEmails: ["root@example.com"] },
    inference: inferenceOptionsFromFile({}, [{ id: "vk-alice", name: "alice", value: ALICE_KEY, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] }]),
  });
  session = (await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD })).body.token;
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm", connection_type: "http", connection_string: mcp.httpUrl, auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "sample" }, tools_to_execute: ["*"], allow_on_all_virtual_keys: true,
  }, { authorization: `Bearer ${session}` });
  assert.equal(created.status, 200, JSON.stringify(created.body));
});

after(async () => {
  await app?.stop();
  await mcp?.close();
  await idp?.close();
});

describe("a valid IdP token", () => {
  test("is the caller's user identity on the tool-execute path", async () => {
    const res = await execute({ authorization: `Bearer ${await idp.userToken(ALICE)}` });
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "mcp_auth_required");
    assert.match(res.body.mcp_auth_required.message, /user "alice@example.com"/);
  });

  test("wins over a virtual key sent beside it", async () => {
    const res = await execute({ authorization: `Bearer ${await idp.userToken(ALICE)}`, "x-gw-vk": ALICE_KEY });
    assert.match(res.body.mcp_auth_required.message, /user "alice@example.com"/);
  });

  test("is not looked up as a virtual key on /v1", async () => {
    const res = await chat(await idp.userToken(ALICE));
    assert.notEqual(res.status, 401, JSON.stringify(res.body));
    assert.notEqual(res.body?.error?.type, "caller_unknown_virtual_key");
  });

  test("of a listed admin opens the admin API; one of another user is refused there", async () => {
    const admin = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${await idp.userToken(ADMIN)}` });
    assert.equal(admin.status, 200, JSON.stringify(admin.body));
    const user = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${await idp.userToken(ALICE)}` });
    assert.equal(user.status, 403, JSON.stringify(user.body));
    assert.equal(user.body.error.type, "admin_role_required");
  });
});

describe("a virtual key in the Authorization header", () => {
  test("keeps working beside SSO", async () => {
    const res = await execute({ authorization: `Bearer ${ALICE_KEY}` });
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.match(res.body.mcp_auth_required.message, /virtual key "alice"/);
  });
});

describe("bad IdP tokens get a clear 401 and are never logged", () => {
  const cases: Array<[string, () => Promise<string>, RegExp]> = [
    ["an expired token", () => idp.userToken(ALICE, { expiresIn: -3600 }), /expired/],
    ["a token not valid yet", () => idp.userToken(ALICE, { notBefore: 3600 }), /not valid yet/],
    ["a token for another audience", () => idp.userToken(ALICE, { audience: "someone-else" }), /audience/],
    ["a token signed with an unpublished key", () => idp.foreignToken(ALICE), /key the issuer does not publish|signature/],
    ["a token of another issuer", () => idp.userToken(ALICE, { issuer: "https://elsewhere.example.com" }), /issued by "https:\/\/elsewhere.example.com"/],
    ["an oversized token", () => idp.userToken(ALICE, { extra: { padding: "x".repeat(9000) } }), /limit is 8192/],
    [
      "an unsigned token (alg none)",
      async () => {
        const now = Math.floor(Date.now() / 1000);
        const header = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
        const payload = Buffer.from(JSON.stringify({ ...ALICE, iss: idp.issuer, aud: GATEWAY_CLIENT_ID, iat: now, exp: now + 600 })).toString("base64url");
        return `${header}.${payload}.`;
      },
      /algorithm is not accepted/,
    ],
    [
      "a token with a tampered payload",
      async () => {
        const [h, , s] = (await idp.userToken(ALICE)).split(".");
        const forged = Buffer.from(JSON.stringify({ ...ADMIN, iss: idp.issuer, aud: GATEWAY_CLIENT_ID, exp: Math.floor(Date.now() / 1000) + 600 })).toString("base64url");
        return `${h}.${forged}.${s}`;
      },
      /signature/,
    ],
  ];

  for (const [name, make, reason] of cases) {
    test(`${name}: 401 on /v1, the tool path and the admin API`, async () => {
      const token = await make();
      const v1 = await chat(token);
      assert.equal(v1.status, 401, JSON.stringify(v1.body));
      assert.equal(v1.body.error.type, "idp_token_invalid");
      assert.match(v1.body.error.message, reason);
      const tool = await execute({ authorization: `Bearer ${token}` });
      assert.equal(tool.status, 401);
      assert.equal(tool.body.error.type, "idp_token_invalid");
      const adminApi = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${token}` });
      assert.equal(adminApi.status, 401);
      assert.ok(!app.logLines.some((line) => line.includes(token.split(".")[1] ?? token)), "the token reached the log");
    });
  }

  test("an HMAC-signed token is refused: the issuer's public keys are never a shared secret", async () => {
    const token = await new SignJWT({ ...ALICE }).setProtectedHeader({ alg: "HS256" }).setIssuer(idp.issuer).setAudience(GATEWAY_CLIENT_ID).setExpirationTime("10m").sign(new TextEncoder().encode("x".repeat(32)));
    const res = await chat(token);
    assert.equal(res.status, 401);
    assert.match(res.body.error.message, /algorithm is not accepted/);
  });
});

describe("key rotation", () => {
  test("a token signed with the IdP's new key is accepted once the JWKS publishes it", async () => {
    assert.notEqual((await chat(await idp.userToken(ALICE))).status, 401);
    await idp.rotateKey();
    const token = await idp.userToken(ALICE);
    // The gateway refetches a JWKS that lacks a token's key at most every few seconds: poll for it.
    const deadline = Date.now() + 60_000;
    let res = await execute({ authorization: `Bearer ${token}` });
    while (res.body?.error?.type === "idp_token_invalid" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      res = await execute({ authorization: `Bearer ${token}` });
    }
    assert.equal(res.body.error.type, "mcp_auth_required", JSON.stringify(res.body));
    assert.match(res.body.mcp_auth_required.message, /user "alice@example.com"/);
  });
});

describe("user-mode flows", () => {
  test("only the IdP user a flow binds can finish it, and its link carries no temp token", async () => {
    const aliceToken = await idp.userToken(ALICE);
    const opened = await execute({ authorization: `Bearer ${aliceToken}` });
    assert.equal(opened.status, 401, JSON.stringify(opened.body));
    const submitUrl = new URL(opened.body.mcp_auth_required.submit_url);
    assert.equal(submitUrl.hash, "");
    const path = `/api/mcp/per-user-headers/flows/${submitUrl.searchParams.get("flow") ?? ""}`;
    const submit = (headers: Record<string, string>) => api(app, "PUT", path, { headers: { "x-user-token": "sample" } }, headers);
    const anonymous = await submit({});
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error.type, "flow_user_mismatch");
    const bob = await submit({ authorization: `Bearer ${await idp.userToken({ sub: "u-bob", email: "bob@example.com" })}` });
    assert.equal(bob.status, 403);
    assert.equal(bob.body.error.type, "flow_user_mismatch");
    const alice = await submit({ authorization: `Bearer ${aliceToken}` });
    assert.equal(alice.status, 200, JSON.stringify(alice.body));
    const call = await execute({ authorization: `Bearer ${aliceToken}` });
    assert.equal(call.status, 200, JSON.stringify(call.body));
  });
});

describe("the per-user credential list of an SSO user", () => {
  const CAROL = { sub: "u-carol", email: "carol@example.com" };
  const DAVE = { sub: "u-dave", email: "dave@example.com" };

  /** Opens a flow with the user's IdP token and finishes it with the same token; answers the token. */
  async function saveCredential(user: { sub: string; email: string }): Promise<string> {
    const token = await idp.userToken(user);
    const opened = await execute({ authorization: `Bearer ${token}` });
    assert.equal(opened.status, 401, JSON.stringify(opened.body));
    const flow = new URL(opened.body.mcp_auth_required.submit_url).searchParams.get("flow") ?? "";
    const saved = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": "sample" } }, { authorization: `Bearer ${token}` });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    return token;
  }

  function list(headers: Record<string, string>) {
    return api(app, "GET", "/api/mcp/sessions", undefined, headers);
  }

  test("lists only the user's own credentials, lets them revoke only those, and an admin sees everyone's", async () => {
    const carol = await saveCredential(CAROL);
    const dave = await saveCredential(DAVE);
    const own = await list({ authorization: `Bearer ${carol}` });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.deepEqual(own.body.sessions.map((s: { identity_kind: string; identity: string }) => `${s.identity_kind}:${s.identity}`), ["user:u-carol"]);
    const daves = (await list({ authorization: `Bearer ${dave}` })).body.sessions;
    assert.equal(daves.length, 1);
    const theirs = await api(app, "DELETE", `/api/mcp/sessions/${daves[0].credential_id as string}`, undefined, { authorization: `Bearer ${carol}` });
    assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
    const all = await list({ authorization: `Bearer ${await idp.userToken(ADMIN)}` });
    assert.equal(all.status, 200, JSON.stringify(all.body));
    const identities = all.body.sessions.map((s: { identity: string }) => s.identity);
    assert.ok(identities.includes("u-carol") && identities.includes("u-dave"), JSON.stringify(identities));
    const mine = await api(app, "DELETE", `/api/mcp/sessions/${own.body.sessions[0].credential_id as string}`, undefined, { authorization: `Bearer ${carol}` });
    assert.equal(mine.status, 200, JSON.stringify(mine.body));
    assert.deepEqual((await list({ authorization: `Bearer ${carol}` })).body.sessions, []);
    assert.equal((await list({ authorization: `Bearer ${dave}` })).body.sessions.length, 1);
  });

  test("a bad IdP token on the list is a 401, not someone else's view", async () => {
    const res = await list({ authorization: `Bearer ${await idp.foreignToken(CAROL)}` });
    assert.equal(res.status, 401, JSON.stringify(res.body));
  });
});
