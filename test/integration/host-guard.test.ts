/**
 * DNS-rebinding protection on a gateway bound to 127.0.0.1: a foreign Host is refused with 403 on every
 * path, loopback names pass on any port, client.allowed_hosts adds names; a browser Origin other than the
 * gateway's own or one in client.allowed_origins is refused on /api and /mcp but not on /v1.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import { after, before, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";

let app: TestApp;

before(async () => {
  app = await startApp();
});

after(async () => {
  await app?.stop();
});

/** A request with a Host header of our choosing (fetch does not let one be set). */
function rawRequest(path: string, headers: Record<string, string>, method = "GET"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: app.port, path, method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function setClient(fields: Record<string, unknown>): Promise<void> {
  const res = await api(app, "PATCH", "/config", { client: fields });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

test("refuses a foreign Host with 403 naming client.allowed_hosts, on every path", async () => {
  for (const path of ["/health", "/api/mcp/clients", "/mcp"]) {
    const res = await rawRequest(path, { host: "attacker.example:8080" });
    assert.equal(res.status, 403, path);
    assert.equal(JSON.parse(res.body).error.type, "host_not_allowed");
    assert.match(JSON.parse(res.body).error.message, /client\.allowed_hosts/);
  }
});

test("answers localhost, 127.0.0.1 and [::1] on any port", async () => {
  for (const host of ["localhost", "localhost:1234", "127.0.0.1:9", "[::1]:8080", "LOCALHOST"]) {
    assert.equal((await rawRequest("/health", { host })).status, 200, host);
  }
});

test("answers a name listed in client.allowed_hosts", async () => {
  await setClient({ allowed_hosts: ["gw.internal.test"] });
  try {
    assert.equal((await rawRequest("/health", { host: "gw.internal.test:8080" })).status, 200);
    assert.equal((await rawRequest("/health", { host: "other.internal.test" })).status, 403);
  } finally {
    await setClient({ allowed_hosts: [] });
  }
});

test("refuses a browser Origin that is not the gateway's own on /api and /mcp", async () => {
  for (const path of ["/api/mcp/clients", "/mcp"]) {
    const res = await rawRequest(path, { host: `127.0.0.1:${app.port}`, origin: "http://attacker.example" });
    assert.equal(res.status, 403, path);
    assert.match(JSON.parse(res.body).error.message, /client\.allowed_origins/);
  }
});

test("serves the gateway's own origin and one listed in client.allowed_origins", async () => {
  const own = await rawRequest("/api/mcp/clients", { host: `127.0.0.1:${app.port}`, origin: `http://127.0.0.1:${app.port}` });
  assert.equal(own.status, 200);
  await setClient({ allowed_origins: ["https://app.example.test"] });
  try {
    const listed = await rawRequest("/api/mcp/clients", { host: `127.0.0.1:${app.port}`, origin: "https://app.example.test" });
    assert.equal(listed.status, 200);
  } finally {
    await setClient({ allowed_origins: [] });
  }
});

test("does not refuse /v1 for its Origin", async () => {
  const res = await rawRequest("/v1/models", { host: `127.0.0.1:${app.port}`, origin: "http://attacker.example" });
  assert.notEqual(res.status, 403);
});

test("refuses an allowed_hosts entry with a scheme or port, naming it", async () => {
  const res = await api(app, "PATCH", "/config", { client: { allowed_hosts: ["http://gw.test:80"] } });
  assert.equal(res.status, 400);
  assert.match(res.body.error.message, /client\.allowed_hosts\[0\]/);
});

test("refuses an allowed_origins entry with a path, naming it", async () => {
  const res = await api(app, "PATCH", "/config", { client: { allowed_origins: ["https://app.example.test/"] } });
  assert.equal(res.status, 400);
  assert.match(res.body.error.message, /client\.allowed_origins\[0\]/);
});

test("refuses an unknown client.mcp_server_auth_mode, naming it", async () => {
  const res = await api(app, "PATCH", "/config", { client: { mcp_server_auth_mode: "cookies" } });
  assert.equal(res.status, 400);
  assert.match(res.body.error.message, /client\.mcp_server_auth_mode/);
  assert.match(res.body.error.message, /"headers", "both" or "oauth"/);
});

test("guards the OAuth authorization server's paths by Host and Origin too", async () => {
  await setClient({ mcp_server_auth_mode: "oauth" });
  try {
    for (const path of ["/oauth2/.well-known/openid-configuration", "/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp"]) {
      assert.equal((await rawRequest(path, { host: `127.0.0.1:${app.port}` })).status, 200, path);
      assert.equal((await rawRequest(path, { host: "attacker.example:8080" })).status, 403, path);
      assert.equal((await rawRequest(path, { host: `127.0.0.1:${app.port}`, origin: "https://attacker.example" })).status, 403, `${path} from a foreign origin`);
    }
  } finally {
    await setClient({ mcp_server_auth_mode: "headers" });
  }
});

test("refuses an OAuth request body over the size limit with 413", async () => {
  await setClient({ mcp_server_auth_mode: "oauth" });
  try {
    const res = await rawRequest("/oauth2/reg", { host: `127.0.0.1:${app.port}`, "content-type": "application/json", "content-length": String(64 * 1024 * 1024) }, "POST");
    assert.equal(res.status, 413);
  } finally {
    await setClient({ mcp_server_auth_mode: "headers" });
  }
});

test("accepts client.mcp_server_auth_mode headers", async () => {
  await setClient({ mcp_server_auth_mode: "headers" });
  assert.equal((await api(app, "GET", "/config")).body.config.client.mcp_server_auth_mode, "headers");
});
