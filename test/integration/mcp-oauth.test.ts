/**
 * The gateway as an OAuth 2.1 authorization server for /mcp (client.mcp_server_auth_mode oauth and both),
 * driven by the MCP SDK's own OAuth client: discovery from the 401, dynamic registration, PKCE, a consent
 * page that binds the grant to a virtual key, JWT access tokens for /mcp, rotating refresh tokens, and
 * revocation through /api/oauth2/sessions.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { auth, extractWWWAuthenticateParams, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { importJWK, SignJWT } from "jose";
import { OAuth2Store } from "../../src/services/oauth2/oauth2-store.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { closeMcp, connectMcp, resultText, toolNames } from "../helpers/mcp-client.js";

const DOCS_KEY = "sk-gw-oauth-docs";
const ECHO_KEY = "sk-gw-oauth-echo";
/** Where the test client says the browser comes back; the flow below stops at the redirect to it. */
const REDIRECT_URL = "http://127.0.0.1:1/callback";

let docs: McpFixture;
let app: TestApp;
const open: Client[] = [];

before(async () => {
  docs = await startMcpFixture();
  app = await startApp({
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-docs", name: "docs-team", value: DOCS_KEY, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["*"] }] },
      { id: "vk-echo", name: "echo-only", value: ECHO_KEY, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo"] }] },
    ]),
  });
  const res = await api(app, "POST", "/api/mcp/client", { name: "docs", connection_type: "http", connection_string: docs.httpUrl, tools_to_execute: ["*"] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  await setMode("oauth");
});

after(async () => {
  await Promise.all(open.map((c) => closeMcp(c).catch(() => undefined)));
  await app?.stop();
  await docs?.close();
});

async function setMode(mode: string): Promise<void> {
  const res = await api(app, "PATCH", "/config", { client: { mcp_server_auth_mode: mode } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

const mcpUrl = () => `${app.url}/mcp`;

/** An initialize request without credentials. */
function initialize(headers: Record<string, string> = {}): Promise<Response> {
  return fetch(mcpUrl(), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
}

/** What the browser saw of one authorization: the code it was sent back with (or null), and whether it was shown the consent form. */
interface ConsentResult {
  code: string | null;
  status: number;
  page: string;
  consentShown: boolean;
}

/**
 * What a browser does between the authorization URL and the redirect back: follow redirects with cookies,
 * fill the consent form. `cookies` is the browser's cookie jar, fresh unless a test shares one between sign-ins.
 */
async function consent(authorizationUrl: URL, virtualKey: string, choice: "allow" | "deny" = "allow", cookies = new Map<string, string>()): Promise<ConsentResult> {
  let url = authorizationUrl.href;
  let body: string | undefined;
  let submitted = false;
  for (let step = 0; step < 12; step++) {
    const res = await fetch(url, {
      method: body === undefined ? "GET" : "POST",
      redirect: "manual",
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; "), ...(body === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" }) },
      ...(body === undefined ? {} : { body }),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair?.indexOf("=") ?? -1;
      if (pair && at > 0) cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url);
      if (next.href.startsWith(REDIRECT_URL)) return { code: next.searchParams.get("code"), status: res.status, page: next.href, consentShown: submitted };
      url = next.href;
      body = undefined;
      continue;
    }
    const page = await res.text();
    const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1];
    if (res.status === 200 && action !== undefined && !submitted) {
      url = new URL(action.replace(/&amp;/g, "&"), url).href;
      body = new URLSearchParams({ virtual_key: virtualKey, action: choice }).toString();
      submitted = true;
      continue;
    }
    // A page that posts itself (the provider ending a browser's earlier sign-in as another key): post it, as a browser's script would.
    if (res.status === 200 && action !== undefined && /document\.forms\[0\]\.submit\(\)/.test(page)) {
      url = new URL(action.replace(/&amp;/g, "&"), url).href;
      body = new URLSearchParams([...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/>/g)].map((m): [string, string] => [m[1] ?? "", m[2] ?? ""])).toString();
      continue;
    }
    return { code: null, status: res.status, page, consentShown: submitted };
  }
  throw new Error("the authorization flow did not end within 12 steps");
}

/** The MCP SDK's OAuthClientProvider, with a "browser" that consents as `virtualKey`. */
class TestOAuthClient implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  consentResult: ConsentResult | undefined;

  constructor(
    private readonly virtualKey: string,
    private readonly choice: "allow" | "deny" = "allow",
    private readonly browser = new Map<string, string>(),
  ) {}

  get redirectUrl(): string {
    return REDIRECT_URL;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "gw-test-client", redirect_uris: [REDIRECT_URL], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL) {
    this.consentResult = await consent(url, this.virtualKey, this.choice, this.browser);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** Runs the SDK's whole flow from a 401 of /mcp; returns the signed-in client provider. */
async function signIn(virtualKey: string, client = new TestOAuthClient(virtualKey)): Promise<TestOAuthClient> {
  const refused = await initialize();
  assert.equal(refused.status, 401);
  const { resourceMetadataUrl } = extractWWWAuthenticateParams(refused);
  assert.ok(resourceMetadataUrl, "the 401 names the resource metadata");
  assert.equal(await auth(client, { serverUrl: mcpUrl(), resourceMetadataUrl }), "REDIRECT");
  const code = client.consentResult?.code;
  assert.ok(code, `the consent page gave a code: ${JSON.stringify(client.consentResult)}`);
  assert.equal(await auth(client, { serverUrl: mcpUrl(), resourceMetadataUrl, authorizationCode: code }), "AUTHORIZED");
  assert.ok(client.saved?.access_token);
  return client;
}

async function connectWith(token: string): Promise<Client> {
  const client = await connectMcp(app, "streamable", { authorization: `Bearer ${token}` });
  open.push(client);
  return client;
}

/** A token request straight to the token endpoint. */
async function tokenRequest(params: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const metadata = (await (await fetch(`${app.url}/.well-known/oauth-authorization-server/oauth2`)).json()) as { token_endpoint: string };
  const res = await fetch(metadata.token_endpoint, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(params).toString() });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("with mcp_server_auth_mode oauth", () => {
  test("a /mcp request without a token gets 401 naming the protected-resource metadata", async () => {
    const res = await initialize();
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), `Bearer resource_metadata="${app.url}/.well-known/oauth-protected-resource/mcp"`);
  });

  test("a virtual key in the caller headers is not enough", async () => {
    const res = await initialize({ "x-gw-vk": DOCS_KEY });
    assert.equal(res.status, 401);
  });

  test("serves the protected-resource and authorization-server metadata", async () => {
    const resource = (await (await fetch(`${app.url}/.well-known/oauth-protected-resource/mcp`)).json()) as Record<string, unknown>;
    assert.equal(resource["resource"], mcpUrl());
    assert.deepEqual(resource["authorization_servers"], [`${app.url}/oauth2`]);
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/oauth2", "/oauth2/.well-known/openid-configuration"]) {
      const res = await fetch(`${app.url}${path}`);
      assert.equal(res.status, 200, path);
      const server = (await res.json()) as Record<string, unknown>;
      assert.equal(server["issuer"], `${app.url}/oauth2`, path);
      assert.deepEqual(server["code_challenge_methods_supported"], ["S256"], path);
      assert.ok(typeof server["registration_endpoint"] === "string", path);
    }
  });

  test("the MCP SDK client signs in through the consent page and lists and calls tools as that key", async () => {
    const docsTeam = await connectWith((await signIn(DOCS_KEY)).saved?.access_token ?? "");
    const echoOnly = await connectWith((await signIn(ECHO_KEY)).saved?.access_token ?? "");
    assert.deepEqual(await toolNames(docsTeam), ["docs-add", "docs-echo", "docs-slow"]);
    assert.deepEqual(await toolNames(echoOnly), ["docs-echo"]);
    const result = await echoOnly.callTool({ name: "docs-echo", arguments: { text: "via oauth" } });
    assert.equal(resultText(result), "via oauth");
    assert.equal((await echoOnly.callTool({ name: "docs-add", arguments: { a: 1, b: 2 } })).isError, true);
  });

  test("the legacy SSE transport takes the access token too, and refuses a stream without one", async () => {
    const token = (await signIn(ECHO_KEY)).saved?.access_token ?? "";
    const sse = await connectMcp(app, "sse", { authorization: `Bearer ${token}` });
    open.push(sse);
    assert.deepEqual(await toolNames(sse), ["docs-echo"]);
    const refused = await fetch(`${app.url}/mcp/sse`, { headers: { accept: "text/event-stream" } });
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get("www-authenticate") ?? "", /resource_metadata=/);
  });

  test("an access token is a JWT for the /mcp audience", async () => {
    const token = (await signIn(ECHO_KEY)).saved?.access_token ?? "";
    const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as Record<string, unknown>;
    assert.equal(payload["aud"], mcpUrl());
    assert.equal(payload["sub"], "vk-echo");
  });

  test("a wrong virtual key on the consent page is refused with a clear message and no code", async () => {
    const client = new TestOAuthClient("sk-gw-not-a-key");
    const refused = await initialize();
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(refused);
    assert.equal(await auth(client, { serverUrl: mcpUrl(), ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}) }), "REDIRECT");
    assert.equal(client.consentResult?.code, null);
    assert.equal(client.consentResult?.status, 400);
    assert.match(client.consentResult?.page ?? "", /not a virtual key of this gateway/);
  });

  test("denying on the consent page sends the client back with access_denied and no code", async () => {
    const client = new TestOAuthClient(DOCS_KEY, "deny");
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(await initialize());
    assert.equal(await auth(client, { serverUrl: mcpUrl(), ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}) }), "REDIRECT");
    assert.equal(client.consentResult?.code, null);
    assert.equal(new URL(client.consentResult?.page ?? "http://x").searchParams.get("error"), "access_denied");
  });

  test("a token stops working when its virtual key is switched off", async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "oauth-switched-off" });
    const value = created.body.virtual_key.value as string;
    const token = (await signIn(value)).saved?.access_token ?? "";
    assert.equal((await initialize({ authorization: `Bearer ${token}` })).status, 200);
    assert.equal((await api(app, "PUT", `/api/governance/virtual-keys/${created.body.virtual_key.id as string}`, { is_active: false })).status, 200);
    assert.equal((await initialize({ authorization: `Bearer ${token}` })).status, 401);
  });

  test("a refresh token rotates: the new pair works and the old refresh token is refused", async () => {
    const client = await signIn(DOCS_KEY);
    const first = client.saved;
    assert.ok(first?.refresh_token);
    const clientId = client.info?.client_id ?? "";
    const refreshed = await tokenRequest({ grant_type: "refresh_token", refresh_token: first.refresh_token, client_id: clientId });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    assert.notEqual(refreshed.body["refresh_token"], first.refresh_token);
    const again = await tokenRequest({ grant_type: "refresh_token", refresh_token: first.refresh_token, client_id: clientId });
    assert.equal(again.status, 400);
    assert.equal(again.body["error"], "invalid_grant");
  });

  test("GET /api/oauth2/sessions lists the grant and DELETE revokes it: its token and refresh token are refused", async () => {
    const client = await signIn(ECHO_KEY);
    const token = client.saved?.access_token ?? "";
    const mcp = await connectWith(token);
    assert.deepEqual(await toolNames(mcp), ["docs-echo"]);
    const listed = await api(app, "GET", "/api/oauth2/sessions");
    assert.equal(listed.status, 200);
    const session = (listed.body.sessions as Record<string, any>[]).find((s) => s["client_id"] === client.info?.client_id);
    assert.ok(session, JSON.stringify(listed.body));
    assert.equal(session["virtual_key_id"], "vk-echo");
    assert.equal(session["client_name"], "gw-test-client");
    assert.ok(Array.isArray(session["scopes"]) && session["scopes"].includes("mcp"), JSON.stringify(session));
    assert.equal((await api(app, "DELETE", `/api/oauth2/sessions/${session["id"] as string}`)).status, 200);
    assert.equal((await initialize({ authorization: `Bearer ${token}` })).status, 401);
    const refresh = await tokenRequest({ grant_type: "refresh_token", refresh_token: client.saved?.refresh_token ?? "", client_id: client.info?.client_id ?? "" });
    assert.equal(refresh.status, 400);
    assert.equal((await api(app, "DELETE", `/api/oauth2/sessions/${session["id"] as string}`)).status, 404);
  });

  test("a second sign-in in the same browser shows the consent page again instead of reusing the first key's grant", async () => {
    const browser = new Map<string, string>();
    const first = await signIn(DOCS_KEY, new TestOAuthClient(DOCS_KEY, "allow", browser));
    // The same MCP client (registered once) signs in again from the same browser, for the person now at it.
    const second = new TestOAuthClient(ECHO_KEY, "allow", browser);
    second.info = first.info;
    const signedIn = await signIn(ECHO_KEY, second);
    assert.equal(second.consentResult?.consentShown, true, "the second authorization was granted without the consent page");
    const mcp = await connectWith(signedIn.saved?.access_token ?? "");
    assert.deepEqual(await toolNames(mcp), ["docs-echo"]);
  });

  test("a consent page opened in one browser cannot be completed from another browser", async () => {
    let authorizationUrl: URL | undefined;
    const client = new TestOAuthClient(DOCS_KEY);
    client.redirectToAuthorization = async (url: URL) => {
      authorizationUrl = url;
    };
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(await initialize());
    assert.equal(await auth(client, { serverUrl: mcpUrl(), ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}) }), "REDIRECT");
    assert.ok(authorizationUrl);
    // The first browser follows the authorization to the consent page...
    const first = new Map<string, string>();
    let url = authorizationUrl.href;
    let action: string | undefined;
    for (let step = 0; step < 6 && action === undefined; step++) {
      const res = await fetch(url, { redirect: "manual", headers: { cookie: [...first].map(([k, v]) => `${k}=${v}`).join("; ") } });
      for (const line of res.headers.getSetCookie()) {
        const [pair = ""] = line.split(";");
        const at = pair.indexOf("=");
        if (at > 0) first.set(pair.slice(0, at), pair.slice(at + 1));
      }
      const location = res.headers.get("location");
      if (location) {
        url = new URL(location, url).href;
        await res.text();
        continue;
      }
      action = /<form method="post" action="([^"]+)"/.exec(await res.text())?.[1];
    }
    assert.ok(action, "the first browser reached the consent page");
    // ...and another browser, with cookies of its own, posts the form with a key it holds.
    const res = await fetch(new URL(action.replace(/&amp;/g, "&"), url), {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: "_session=other-browser" },
      body: new URLSearchParams({ virtual_key: ECHO_KEY, action: "allow" }).toString(),
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null, "no redirect carrying a code");
    assert.match(await res.text(), /expired or was already used/);
  });

  test("a token signed by the gateway for another audience is refused", async () => {
    const client = await signIn(DOCS_KEY);
    const real = JSON.parse(Buffer.from((client.saved?.access_token ?? "").split(".")[1] ?? "", "base64url").toString("utf8")) as Record<string, unknown>;
    const [jwk] = (await new OAuth2Store(app.store).secrets()).jwks.keys;
    assert.ok(jwk);
    const key = await importJWK(jwk, "ES256");
    const forged = await new SignJWT({ ...real, aud: `${app.url}/other` }).setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: jwk.kid ?? "" }).sign(key);
    assert.equal((await initialize({ authorization: `Bearer ${forged}` })).status, 401);
    const same = await new SignJWT(real).setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: jwk.kid ?? "" }).sign(key);
    assert.equal((await initialize({ authorization: `Bearer ${same}` })).status, 200, "the same claims for /mcp pass");
  });
});

describe("with mcp_server_auth_mode both", () => {
  before(() => setMode("both"));
  after(() => setMode("oauth"));

  test("accepts a virtual key in the caller headers and an access token", async () => {
    const byHeader = await connectMcp(app, "streamable", { "x-gw-vk": ECHO_KEY });
    open.push(byHeader);
    assert.deepEqual(await toolNames(byHeader), ["docs-echo"]);
    const byToken = await connectWith((await signIn(DOCS_KEY)).saved?.access_token ?? "");
    assert.deepEqual(await toolNames(byToken), ["docs-add", "docs-echo", "docs-slow"]);
  });

  test("answers a request with neither with the 401 that starts the sign-in", async () => {
    const res = await initialize();
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /resource_metadata=/);
  });
});

describe("with mcp_server_auth_mode headers", () => {
  before(() => setMode("headers"));
  after(() => setMode("oauth"));

  test("serves no authorization server and keeps taking the caller headers", async () => {
    assert.equal((await fetch(`${app.url}/.well-known/oauth-authorization-server`)).status, 404);
    assert.equal((await initialize({ "x-gw-vk": ECHO_KEY })).status, 200);
  });
});

describe("across a restart", () => {
  test("a grant survives: its access token and its refresh token still work", async () => {
    const client = await signIn(ECHO_KEY);
    const options = app.restartOptions;
    const port = app.port;
    await Promise.all(open.splice(0).map((c) => closeMcp(c).catch(() => undefined)));
    await app.stop({ keepData: true });
    // The same address: the issuer and the audience follow the origin.
    app = await startApp({ ...options, port });
    const mcp = await connectWith(client.saved?.access_token ?? "");
    assert.deepEqual(await toolNames(mcp), ["docs-echo"]);
    const refreshed = await tokenRequest({ grant_type: "refresh_token", refresh_token: client.saved?.refresh_token ?? "", client_id: client.info?.client_id ?? "" });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  });
});
