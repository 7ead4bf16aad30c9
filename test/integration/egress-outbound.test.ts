/**
 * The egress policy (network.egress) on every outbound request besides providers, through the real app,
 * on loopback only. 127.0.0.1 and ::1 (what `localhost` resolves to) are denied, so a destination named
 * `localhost` passes the save-time check and is refused after resolution, without a byte reaching it;
 * 127.0.0.3 stays permitted for a server that redirects there. Covered: MCP http and sse connections, OAuth
 * discovery at client creation, a token refresh, the pricing download (through a redirect), and the
 * save-time and config-time checks of the URLs the gateway fetches.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createApp, type AppOptions } from "../../src/app.js";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startOauthFixture, type OauthFixture } from "../fixtures/oauth-server.js";
import { startPricingServer, type PricingServer } from "../fixtures/pricing-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { connectOauthClient, executeTool } from "../helpers/oauth-clients.js";

const LOOPBACK_DENIED = { allow: [], deny: ["127.0.0.1/32", "::1/128", "127.0.0.2/32"] };

/** The same URL with its host replaced by `localhost`, a name that resolves to the denied 127.0.0.1. */
function viaLocalhost(url: string): string {
  const parsed = new URL(url);
  parsed.hostname = "localhost";
  return parsed.href;
}

async function clientNamed(app: TestApp, name: string): Promise<{ state: string; last_failure?: { stage: string; message: string } } | undefined> {
  const res = await api(app, "GET", `/api/mcp/clients?search=${name}`);
  return (res.body.clients as { name: string; state: string; last_failure?: { stage: string; message: string } }[]).find((c) => c.name === name);
}

/** A server on 127.0.0.3 (permitted) that answers every request with a 307 to `target`, counting them. */
async function startRedirector(target: string): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    req.resume();
    res.writeHead(307, { location: target }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.3", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.3:${port}/`,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("MCP connections", () => {
  let app: TestApp;
  let mcp: McpFixture;

  before(async () => {
    mcp = await startMcpFixture();
    app = await startApp({ egress: LOOPBACK_DENIED });
  });
  after(async () => {
    await app?.stop();
    await mcp?.close();
  });

  for (const type of ["http", "sse"] as const) {
    test(`an ${type} client whose host resolves to a denied address is refused at connect, and nothing reaches the server`, async () => {
      const name = `byname_${type}`;
      const url = viaLocalhost(type === "http" ? mcp.httpUrl : mcp.sseUrl);
      const seen = mcp.seenHeaders.length;
      const created = await api(app, "POST", "/api/mcp/client", { name, connection_type: type, connection_string: url });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.match(created.body.message, /EGRESS_DENIED/);
      assert.match(created.body.message, /localhost resolves to 127\.0\.0\.1 is refused by network\.egress\.deny/);
      const client = await clientNamed(app, name);
      assert.equal(client?.last_failure?.stage, "connect");
      assert.match(client?.last_failure?.message ?? "", /EGRESS_DENIED/);
      assert.equal(mcp.seenHeaders.length, seen, "a request reached the denied MCP server");
    });
  }

  test("an MCP client on a denied literal address is refused when saved", async () => {
    const res = await api(app, "POST", "/api/mcp/client", { name: "literal", connection_type: "sse", connection_string: "http://127.0.0.2:9/sse" });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /connection_string/);
    assert.match(res.body.error.message, /network\.egress\.deny/);
  });
});

describe("OAuth for MCP servers", () => {
  let app: TestApp;
  let oauth: OauthFixture;

  before(async () => {
    oauth = await startOauthFixture();
    app = await startApp({ egress: LOOPBACK_DENIED });
  });
  after(async () => {
    await app?.stop();
    await oauth?.close();
  });

  test("discovery at client creation is refused when the server's name resolves to a denied address", async () => {
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "discovering",
      connection_type: "http",
      connection_string: viaLocalhost(oauth.mcpUrl),
      auth_type: "oauth",
    });
    assert.equal(created.status, 422, JSON.stringify(created.body));
    assert.equal(created.body.error.type, "upstream_oauth_failed");
    assert.match(created.body.error.message, /OAuth discovery/);
    assert.match(created.body.error.message, /EGRESS_DENIED/);
    assert.equal(oauth.registrations, 0);
  });

  for (const field of ["token_url", "registration_url", "revocation_url"]) {
    test(`a ${field} on a denied address is refused when saved, naming the field and network.egress`, async () => {
      const res = await api(app, "POST", "/api/mcp/client", {
        name: `saved_${field}`,
        connection_type: "http",
        connection_string: "http://127.0.0.3:9/mcp",
        auth_type: "oauth",
        oauth_config: { [field]: "http://127.0.0.2:9/oauth" },
      });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, new RegExp(`oauth_config\\.${field}`));
      assert.match(res.body.error.message, /network\.egress\.deny/);
    });
  }

  test("an authorize_url on a denied address is accepted: only a browser opens it", async () => {
    const res = await api(app, "POST", "/api/mcp/client", {
      name: "browser_only",
      connection_type: "http",
      connection_string: "http://127.0.0.3:9/mcp",
      auth_type: "oauth",
      oauth_config: { client_id: "gw", authorize_url: "http://127.0.0.2:9/authorize", token_url: "http://127.0.0.3:9/token" },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(new URL(res.body.authorize_url).host, "127.0.0.2:9");
  });

  test("a token_exchange authorization_server_url on a denied address is refused when saved", async () => {
    const res = await api(app, "POST", "/api/mcp/client", {
      name: "exchanging",
      connection_type: "http",
      connection_string: "http://127.0.0.3:9/mcp",
      auth_type: "token_exchange",
      token_exchange: { audience: "api://mcp", client_id: "gw", authorization_server_url: "http://127.0.0.2:9/token" },
    });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /token_exchange\.authorization_server_url/);
    assert.match(res.body.error.message, /network\.egress\.deny/);
  });
});

describe("an OAuth token refresh", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  let now = Date.now();

  before(async () => {
    oauth = await startOauthFixture();
    app = await startApp({ mcpTiming: { now: () => now } });
  });
  after(async () => {
    await app?.stop();
    await oauth?.close();
  });

  test("to a token endpoint the policy refuses after a restart fails with EGRESS_DENIED and sends nothing", async () => {
    // Authorized while permitted, the token endpoint named as localhost so that a later policy can refuse it alone.
    now = Date.now();
    await connectOauthClient(app, oauth, "refreshing", { oauth_config: { token_url: viaLocalhost(`${oauth.issuer}/token`) } });
    await app.stop({ keepData: true });
    app = await startApp({ ...app.restartOptions, egress: { allow: [], deny: ["localhost"] }, mcpTiming: { now: () => now } });
    await app.runtime.firstConnectionsDone();
    const refreshes = oauth.tokenRequests.filter((grant) => grant === "refresh_token").length;
    // Half a minute before the hour-long token expires, inside the minute a refresh is made ahead of expiry.
    now = Date.now() + 3600_000 - 30_000;
    const call = await executeTool(app, "refreshing-whoami");
    assert.match(String(call.body.content), /^Error: tool refreshing-whoami failed: /);
    assert.match(call.body.content, /OAuth token refresh failed: connection refused by the egress policy: localhost is refused by network\.egress\.deny \(EGRESS_DENIED\)/);
    assert.equal(oauth.tokenRequests.filter((grant) => grant === "refresh_token").length, refreshes);
  });
});

describe("the pricing download", () => {
  let app: TestApp;
  let server: PricingServer;
  let redirector: Awaited<ReturnType<typeof startRedirector>>;

  before(async () => {
    server = await startPricingServer({ kind: "json", body: {} });
    redirector = await startRedirector(viaLocalhost(`${server.url}/prices.json`));
    app = await startApp({ egress: LOOPBACK_DENIED, pricing: { url: redirector.url, syncIntervalMs: 86_400_000 } });
  });
  after(async () => {
    await app?.stop();
    await redirector?.close();
    await server?.close();
  });

  test("redirected to a name that resolves to a denied address fails with EGRESS_DENIED and reaches nothing", async () => {
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "pricing_sync_failed");
    assert.match(res.body.error.message, /localhost resolves to 127\.0\.0\.1 is refused by network\.egress\.deny \(EGRESS_DENIED\)/);
    assert.ok(redirector.hits() > 0, "the permitted server was not asked");
    assert.equal(server.hits, 0);
  });
});

describe("the config file", () => {
  const cases: [string, Partial<AppOptions>][] = [
    ["pricing.pricing_url", { pricing: { url: "http://127.0.0.2:9/prices.json", syncIntervalMs: 86_400_000 } }],
    ["sso.issuer", { sso: { ...SSO_OFF, issuer: "http://127.0.0.2:9", clientId: "gw" } }],
  ];
  for (const [setting, options] of cases) {
    test(`a ${setting} on a denied address stops start-up naming the setting and network.egress`, async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "gw-"));
      try {
        await assert.rejects(createApp({ port: 0, host: "127.0.0.1", dataDir, egress: LOOPBACK_DENIED, ...options }), (err: Error) => {
          assert.match(err.message, new RegExp(setting.replace(".", "\\.")));
          assert.match(err.message, /network\.egress\.deny/);
          return true;
        });
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }
});
