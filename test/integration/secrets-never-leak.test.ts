/**
 * Secrets never leak: a gateway configured with one secret of each kind (admin password, provider key,
 * virtual key, MCP header, encryption key) runs a representative flow (admin reads, chat through the
 * official SDK, streaming, an MCP tool call, /metrics, errors), and no API response, log line, metric or
 * error message holds any of the values; nor does any column of any table of the database. A token-exchange
 * client secret is configured too.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { seedSecrets, uniqueSecret, type SeededSecrets } from "../helpers/secrets.js";
import { dropSchema, openStore } from "../../src/store/index.js";
import { createLogger } from "../../src/telemetry/logger.js";

const PASSWORD = uniqueSecret("admin-pw-");
const ENCRYPTION_KEY = randomBytes(32).toString("hex");
const EXCHANGE_SECRET = uniqueSecret("tx-secret-");

let mock: MockUpstream;
let mcp: McpFixture;
let app: TestApp | undefined;
let secrets: SeededSecrets;
let secretValues: string[];
/** Every response body and error message the run saw, with where it came from. */
const seen: { where: string; text: string }[] = [];

/** Records a response's body text under its method and path. */
function record(where: string, text: string): void {
  seen.push({ where, text });
}

/** fetch that records every response body, for the SDK. */
const recordingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  record(`${init?.method ?? "GET"} ${url}`, await res.clone().text());
  return res;
};

/** An admin REST call whose answer is recorded. */
async function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any /* JSON of any shape */ }> {
  assert.ok(app);
  const res = await api(app, method, path, body, { authorization: `Bearer ${token}`, ...headers });
  record(`${method} ${path}`, typeof res.body === "string" ? res.body : JSON.stringify(res.body ?? ""));
  return res;
}

let token = "";

before(async () => {
  mock = await startMockOpenAi();
  mcp = await startMcpFixture();
  app = await startApp({ encryptionKey: ENCRYPTION_KEY, auth: { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 } });
  const login = await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD });
  assert.equal(login.status, 200);
  token = login.body.token as string;
  secrets = await seedSecrets(app, mock.url, mcp.httpUrl, { authorization: `Bearer ${token}` });
  const exchange = await api(
    app,
    "POST",
    "/api/mcp/client",
    {
      name: "hr",
      connection_type: "http",
      connection_string: mcp.httpUrl,
      auth_type: "token_exchange",
      tools_to_execute: ["*"],
      token_exchange: { audience: "https://hr.example", client_id: "gateway", client_secret: EXCHANGE_SECRET, authorization_server_url: `${mock.url}/token` },
    },
    { authorization: `Bearer ${token}` },
  );
  assert.equal(exchange.status, 200, JSON.stringify(exchange.body));
  secretValues = [PASSWORD, ENCRYPTION_KEY, EXCHANGE_SECRET, secrets.providerKey, secrets.virtualKey, secrets.mcpHeader];
});

after(async () => {
  await app?.stop();
  await mock?.close();
  await mcp?.close();
});

/** The secrets found in `text`, by value. */
function leaked(text: string): string[] {
  return secretValues.filter((s) => text.includes(s));
}

test("a full run leaks no secret in any response, error, metric or log line", async () => {
  assert.ok(app);
  // Admin reads of everything that holds a secret.
  for (const path of ["/api/v1/providers", "/api/v1/providers/openai", "/api/governance/virtual-keys", "/api/mcp/clients"]) {
    const res = await admin("GET", path);
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
  }
  const vks = await admin("GET", "/api/governance/virtual-keys");
  for (const vk of vks.body.virtual_keys as { id: string }[]) assert.equal((await admin("GET", `/api/governance/virtual-keys/${vk.id}`)).status, 200);

  // Inference with the official SDK: JSON, streaming, and refusals.
  const client = new OpenAI({ apiKey: secrets.virtualKey, baseURL: `${app.url}/v1`, maxRetries: 0, fetch: recordingFetch });
  await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], stream: true });
  for await (const _chunk of stream) {
    // Drained so the whole stream is recorded.
  }
  // An upstream that echoes the key it was sent, as some providers do in their 401 message.
  mock.failNext(401, `Incorrect API key provided: ${secrets.providerKey}`);
  const upstreamError = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }).catch((err: unknown) => err);
  assert.ok(upstreamError instanceof OpenAI.APIError);
  record("upstream 401 error message", upstreamError.message);
  assert.match(upstreamError.message, /Incorrect API key provided: <redacted>/);
  const wrongKey = new OpenAI({ apiKey: `${secrets.virtualKey}x`, baseURL: `${app.url}/v1`, maxRetries: 0, fetch: recordingFetch });
  const refused = await wrongKey.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }).catch((err: unknown) => err);
  assert.ok(refused instanceof OpenAI.APIError);
  record("wrong virtual key error message", refused.message);

  // MCP: a tool call through the client whose header is secret, and one that fails.
  const headers = { authorization: `Bearer ${secrets.virtualKey}` };
  const tool = await admin("POST", "/v1/mcp/tool/execute", { id: "call_1", type: "function", function: { name: "vault-echo", arguments: '{"text": "hi"}' } }, headers);
  assert.equal(tool.status, 200, JSON.stringify(tool.body));
  assert.ok(mcp.seenHeaders.some((h) => h["x-vault-token"] === secrets.mcpHeader), "the MCP server got the header");
  const badTool = await admin("POST", "/v1/mcp/tool/execute", { id: "call_2", type: "function", function: { name: "vault-add", arguments: '{"a": "x"}' } }, headers);
  record("bad tool call", JSON.stringify(badTool.body));

  // Admin errors: a wrong password, a bad body, an unknown id.
  record("wrong password", JSON.stringify((await api(app, "POST", "/api/session/login", { username: "admin", password: `${PASSWORD}x` })).body));
  await admin("POST", "/api/v1/providers", { name: "openai", keys: [{ id: "k1", value: secrets.providerKey }], network_config: { base_url: "not a url" } });
  await admin("GET", "/api/mcp/client/does-not-exist");

  // Metrics, with the admin's basic credentials.
  const metrics = await fetch(`${app.url}/metrics`, { headers: { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString("base64")}` } });
  assert.equal(metrics.status, 200);
  record("GET /metrics", await metrics.text());

  assert.ok(seen.length > 15, `only ${seen.length} responses recorded`);
  for (const { where, text } of seen) assert.deepEqual(leaked(text), [], `${where} holds a secret: ${text.slice(0, 500)}`);
  assert.ok(app.logLines.length > 10, `only ${app.logLines.length} log lines`);
  for (const line of app.logLines) assert.deepEqual(leaked(line), [], `a log line holds a secret: ${line.slice(0, 500)}`);
});

test("no column of any table holds a secret in plaintext", async () => {
  assert.ok(app);
  const restart = app.restartOptions;
  await app.stop({ keepData: true });
  app = undefined;
  const store = await openStore({
    dataDir: restart.dataDir ?? "",
    ...(testDatabaseUrl && restart.schema ? { url: testDatabaseUrl, schema: restart.schema } : {}),
    encryptionKey: ENCRYPTION_KEY,
    logger: createLogger({ level: "silent" }),
  });
  try {
    const conn = store.orm.em.getConnection();
    const columns = await conn.execute<{ table_name: string; column_name: string }[]>(
      `select table_name, column_name from information_schema.columns where table_schema = current_schema() and table_name in
         (select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE')`,
    );
    assert.ok(columns.length > 20, `only ${columns.length} columns found`);
    let values = 0;
    for (const { table_name: table, column_name: column } of columns) {
      const rows = await conn.execute<{ v: string | null }[]>(`select "${column}"::text as v from "${table}" where "${column}" is not null`);
      for (const row of rows) {
        values += 1;
        assert.deepEqual(leaked(row.v ?? ""), [], `${table}.${column} holds a secret in plaintext`);
      }
    }
    // The secrets were stored: their tables hold (encrypted) rows.
    assert.ok(values > 0);
    const sealed = await conn.execute<{ keys: string }[]>(`select keys from provider`);
    assert.match(sealed[0]?.keys ?? "", /^v1:/);
  } finally {
    await store.close();
    if (testDatabaseUrl && restart.schema) await dropSchema(testDatabaseUrl, restart.schema);
    await rm(restart.dataDir ?? "", { recursive: true, force: true });
  }
});
