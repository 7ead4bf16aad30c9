/**
 * token_exchange clients: each caller's own IdP token is exchanged (RFC 8693, at oidc-provider's token
 * endpoint) for a token of the MCP server's audience, so users reach the upstream as themselves and their
 * own token never goes upstream; verify-exchange bootstraps the client with the signed-in admin's token.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, JWT_BEARER_GRANT, MCP_AUDIENCE, OBO_CLIENT_ID, OBO_CLIENT_SECRET, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const PASSWORD = "admin-password-1";
const ALICE_KEY = "sk-gw-alice";
const ROOT = { sub: "u-root", email: "root@example.com" };
const ALICE = { sub: "u-alice", email: "alice@example.com" };
const BOB = { sub: "u-bob", email: "bob@example.com" };

let idp: IdpFixture;
let app: TestApp;
let session: string;
let clientId: string;

function exchangeClient(name: string, audience: string) {
  return {
    name, connection_type: "http", connection_string: idp.mcpUrl, auth_type: "token_exchange", tools_to_execute: ["*"],
    token_exchange: { audience, client_id: GATEWAY_CLIENT_ID, client_secret: GATEWAY_CLIENT_SECRET, scopes: ["hr.read"] },
  };
}

function admin(): Record<string, string> {
  return { authorization: `Bearer ${session}` };
}

function callTool(tool: string, headers: Record<string, string>) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: `hr-${tool}`, arguments: "{}" } }, headers);
}

function whoami(headers: Record<string, string>) {
  return callTool("whoami", headers);
}

async function clientView(id: string) {
  const list = await api(app, "GET", "/api/mcp/clients", undefined, admin());
  return list.body.clients.find((c: { client_id: string }) => c.client_id === id);
}

before(async () => {
  idp = await startIdpFixture();
  app = await startApp({
    auth: { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 },
    sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, adminEmails: [ROOT.email] },
    inference: inferenceOptionsFromFile({}, [{ id: "vk-alice", name: "alice", value: ALICE_KEY, mcp_configs: [{ mcp_client_name: "hr", tools_to_execute: ["*"] }] }]),
  });
  session = (await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD })).body.token;
  const created = await api(app, "POST", "/api/mcp/client", exchangeClient("hr", MCP_AUDIENCE), admin());
  assert.equal(created.status, 200, JSON.stringify(created.body));
  clientId = created.body.client_id;
});

after(async () => {
  await app?.stop();
  await idp?.close();
});

describe("creating a token_exchange client", () => {
  test("waits in pending_verification, per-call, with its client secret redacted on reads", async () => {
    const view = await clientView(clientId);
    assert.equal(view.state, "pending_verification");
    assert.equal(view.needs_session_stickiness, false);
    assert.equal(view.token_exchange.client_secret, "<redacted>");
    assert.equal(view.token_exchange.grant_style, "rfc8693");
    assert.equal(view.token_exchange.audience, MCP_AUDIENCE);
  });

  test("without an audience is a 400 naming the field", async () => {
    const body = exchangeClient("noaud", "");
    const res = await api(app, "POST", "/api/mcp/client", body, admin());
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /token_exchange\.audience/);
  });

  test("refuses a token_exchange block on another auth type", async () => {
    const res = await api(app, "POST", "/api/mcp/client", { ...exchangeClient("wrong", MCP_AUDIENCE), auth_type: "none" }, admin());
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /token_exchange: is only for token_exchange clients/);
  });
});

describe("verify-exchange", () => {
  test("needs the admin's own IdP token: an admin session alone is refused", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${clientId}/verify-exchange`, {}, admin());
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "sso_admin_required");
  });

  test("a token for another audience is refused upstream: 422 and the client stays pending", async () => {
    const other = await api(app, "POST", "/api/mcp/client", exchangeClient("other", "https://other.example.com/api"), admin());
    assert.equal(other.status, 200, JSON.stringify(other.body));
    const rootToken = await idp.userToken(ROOT);
    const res = await api(app, "POST", `/api/mcp/client/${other.body.client_id}/verify-exchange`, {}, { authorization: `Bearer ${rootToken}` });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.match(res.body.error.message, /upstream verify failed/);
    assert.ok(!res.body.error.message.includes(rootToken));
    assert.equal((await clientView(other.body.client_id)).state, "pending_verification");
  });

  test("exchanges the signed-in admin's token, discovers the tools and makes the client healthy", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${clientId}/verify-exchange`, {}, { authorization: `Bearer ${await idp.userToken(ROOT)}` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "success");
    assert.equal(res.body.tools_count, 2);
    const view = await clientView(clientId);
    assert.equal(view.state, "healthy");
    assert.deepEqual(view.tools.map((t: { name: string }) => t.name), ["whoami", "touch"]);
  });
});

describe("tool calls", () => {
  test("two users reach the upstream as themselves, and their own tokens never go upstream", async () => {
    const aliceToken = await idp.userToken(ALICE);
    const bobToken = await idp.userToken(BOB);
    const alice = await whoami({ authorization: `Bearer ${aliceToken}` });
    assert.equal(alice.status, 200, JSON.stringify(alice.body));
    assert.equal(alice.body.content, "subject u-alice");
    const bob = await whoami({ authorization: `Bearer ${bobToken}` });
    assert.equal(bob.body.content, "subject u-bob");
    assert.ok(!idp.mcpAuthorizations.some((h) => h.includes(aliceToken) || h.includes(bobToken)), "a caller's own token reached the MCP server");
  });

  test("the exchange is RFC 8693: the caller's token as subject, the audience and scopes, client credentials", async () => {
    const token = await idp.userToken(ALICE, { extra: { n: 1 } });
    await whoami({ authorization: `Bearer ${token}` });
    const form = idp.exchanges.at(-1);
    assert.equal(form?.["grant_type"], "urn:ietf:params:oauth:grant-type:token-exchange");
    assert.equal(form?.["subject_token"], token);
    assert.equal(form?.["subject_token_type"], "urn:ietf:params:oauth:token-type:access_token");
    assert.equal(form?.["audience"], MCP_AUDIENCE);
    assert.equal(form?.["scope"], "hr.read");
    assert.equal(form?.["requested_token_type"], undefined);
  });

  test("an exchanged token is reused for the same caller and token until shortly before it expires", async () => {
    const token = await idp.userToken(BOB, { extra: { n: 2 } });
    await whoami({ authorization: `Bearer ${token}` });
    const before = idp.exchanges.length;
    const again = await whoami({ authorization: `Bearer ${token}` });
    assert.equal(again.body.content, "subject u-bob");
    assert.equal(idp.exchanges.length, before);
  });

  test("a caller with a virtual key but no IdP token gets mcp_auth_required of kind exchange", async () => {
    const res = await whoami({ "x-gw-vk": ALICE_KEY });
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "mcp_auth_required");
    assert.equal(res.body.mcp_auth_required.kind, "exchange");
    assert.equal(res.body.mcp_auth_required.subject_token_missing, true);
    assert.equal(res.body.mcp_auth_required.mcp_client_name, "hr");
  });

  test("a caller with no identity at all gets mcp_identity_required", async () => {
    const res = await whoami({});
    assert.equal(res.status, 401);
    assert.equal(res.body.error.type, "mcp_identity_required");
    assert.match(res.body.error.message, /requires an identity/);
  });

  test("an expired IdP token is a clear 401 before any exchange", async () => {
    const before = idp.exchanges.length;
    const res = await whoami({ authorization: `Bearer ${await idp.userToken(ALICE, { expiresIn: -600 })}` });
    assert.equal(res.status, 401);
    assert.equal(res.body.error.type, "idp_token_invalid");
    assert.match(res.body.error.message, /expired/);
    assert.equal(idp.exchanges.length, before);
  });
});

describe("an exchanged token the upstream rejects", () => {
  test("a read-only tool drops the cached token, exchanges again and succeeds on the one retry", async () => {
    const auth = { authorization: `Bearer ${await idp.userToken(ALICE, { extra: { n: 3 } })}` };
    assert.equal((await whoami(auth)).body.content, "subject u-alice");
    idp.revokeExchangedTokens();
    const before = idp.exchanges.length;
    const res = await whoami(auth);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.content, "subject u-alice");
    assert.equal(idp.exchanges.length, before + 1);
  });

  test("a tool that is neither read-only nor idempotent fails closed without a retry, and the next call exchanges afresh", async () => {
    const auth = { authorization: `Bearer ${await idp.userToken(BOB, { extra: { n: 4 } })}` };
    assert.equal((await callTool("touch", auth)).body.content, "touched by u-bob");
    const touched = idp.touches;
    idp.revokeExchangedTokens();
    const exchanged = idp.exchanges.length;
    const calls = idp.mcpAuthorizations.length;
    const failed = await callTool("touch", auth);
    assert.equal(failed.status, 200, JSON.stringify(failed.body));
    assert.match(failed.body.content, /^Error: tool hr-touch failed: .*rejected the credentials \(HTTP 401\)/);
    assert.equal(idp.exchanges.length, exchanged, "the failed call exchanged again");
    assert.equal(idp.mcpAuthorizations.length, calls + 1, "the failed call reached the upstream more than once");
    const next = await callTool("touch", auth);
    assert.equal(next.body.content, "touched by u-bob");
    assert.equal(idp.exchanges.length, exchanged + 1);
    assert.equal(idp.touches, touched + 1);
  });
});

describe("the entra_obo grant style", () => {
  test("exchanges with Entra ID's on-behalf-of form and reaches the upstream as the caller", async () => {
    const body = {
      ...exchangeClient("obo", MCP_AUDIENCE),
      token_exchange: { audience: MCP_AUDIENCE, client_id: OBO_CLIENT_ID, client_secret: OBO_CLIENT_SECRET, grant_style: "entra_obo" },
    };
    const created = await api(app, "POST", "/api/mcp/client", body, admin());
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const verified = await api(app, "POST", `/api/mcp/client/${created.body.client_id}/verify-exchange`, {}, { authorization: `Bearer ${await idp.userToken(ROOT)}` });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    const token = await idp.userToken(ALICE, { extra: { n: 5 } });
    const res = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "obo-whoami", arguments: "{}" } }, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.content, "subject u-alice");
    const form = idp.exchanges.at(-1);
    assert.equal(form?.["grant_type"], JWT_BEARER_GRANT);
    assert.equal(form?.["assertion"], token);
    assert.equal(form?.["requested_token_use"], "on_behalf_of");
    assert.equal(form?.["scope"], `${MCP_AUDIENCE}/.default`);
    assert.equal(form?.["authenticated_client"], OBO_CLIENT_ID);
    assert.equal(form?.["subject_token"], undefined);
  });
});
