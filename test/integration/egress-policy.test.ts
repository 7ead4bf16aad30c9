/**
 * The egress policy (network.egress) through the real app, on loopback only: a denied address is a 400
 * when a provider or an MCP client is saved with it, a name that resolves to a denied address is refused
 * when the connection opens (no request reaches the upstream), and link-local addresses and cloud metadata
 * names are refused by default.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/load-config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { errorType, fileKey, refusal, sdk } from "../helpers/inference.js";

let mock: MockUpstream;
let app: TestApp;

before(async () => {
  mock = await startMockOpenAi();
  // 127.0.0.1 and ::1 are what "localhost" resolves to; the gateway's own port is inbound and unaffected.
  app = await startApp({ egress: { allow: [], deny: ["127.0.0.2/32", "127.0.0.1/32", "::1/128"] } });
});

after(async () => {
  await app?.stop();
  await mock?.close();
});

const provider = (name: string, baseUrl: string) => ({ name, keys: [fileKey(`${name}-1`)], network_config: { base_url: baseUrl } });

describe("saving a destination", () => {
  test("refuses a provider base_url on a denied address with a 400 naming the field", async () => {
    const res = await api(app, "POST", "/api/v1/providers", provider("denied", "http://127.0.0.2:9/v1"));
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /network_config\.base_url/);
    assert.match(res.body.error.message, /refused by network\.egress\.deny/);
    assert.equal((await api(app, "GET", "/api/v1/providers/denied")).status, 404);
  });

  test("refuses an MCP connection string on a denied address with a 400 naming the field", async () => {
    const res = await api(app, "POST", "/api/mcp/client", { name: "denied_mcp", connection_type: "http", connection_string: "http://127.0.0.2:9/mcp" });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /connection_string/);
    assert.match(res.body.error.message, /refused by network\.egress\.deny/);
  });

  for (const url of ["http://169.254.169.254/latest", "http://[fe80::1]:80/v1", "http://metadata.google.internal/v1"]) {
    test(`refuses the link-local or metadata destination ${url} by default`, async () => {
      const res = await api(app, "POST", "/api/v1/providers", provider("metadata", url));
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, /link-local or cloud metadata/);
    });
  }
});

describe("opening a connection", () => {
  after(async () => {
    await api(app, "DELETE", "/api/v1/providers/byname");
  });

  test("refuses a name that resolves to a denied address, after resolution, and sends nothing", async () => {
    const port = new URL(mock.url).port;
    const saved = await api(app, "POST", "/api/v1/providers", provider("byname", `http://localhost:${port}`));
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    const before = mock.requests.length;
    const err = await refusal(sdk(app, null).chat.completions.create({ model: "byname/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 502);
    assert.equal(errorType(err), "provider_unavailable");
    assert.match(err.message, /egress policy: localhost resolves to 127\.0\.0\.1 is refused/);
    assert.equal(mock.requests.length, before, "a request reached the denied upstream");
  });
});

describe("the config file", () => {
  test("names a bad egress entry by its path", () => {
    assert.throws(() => parseConfig({ network: { egress: { deny: ["10.0.0.0/99"] } } }, {}), /network\.egress\.deny\[0\]/);
  });
});
