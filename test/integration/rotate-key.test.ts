/**
 * Key rotation (npm run rotate-key): every secret is re-encrypted under the new key in one transaction,
 * the gateway then starts with the new key and uses every secret, the old key is refused, and a value that
 * cannot be opened stops the rotation with nothing changed.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, afterEach, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { sdk } from "../helpers/inference.js";
import { seedSecrets, type SeededSecrets } from "../helpers/secrets.js";
import { rotateEncryptionKey } from "../../src/store/rotate-key.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { GatewayError } from "../../src/errors.js";
import { openStore } from "../../src/store/index.js";

const run = promisify(execFile);
const logger = createLogger({ level: "silent" });

let mock: MockUpstream;
let mcp: McpFixture;
let app: TestApp | undefined;

before(async () => {
  mock = await startMockOpenAi();
  mcp = await startMcpFixture();
});
after(async () => {
  await mock.close();
  await mcp.close();
});
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

function newKey(): string {
  return randomBytes(32).toString("hex");
}

/** Starts a gateway, stores one secret of each kind and stops it, keeping its data. */
async function seeded(encryptionKey?: string): Promise<{ secrets: SeededSecrets; restart: TestApp["restartOptions"] }> {
  app = await startApp(encryptionKey === undefined ? {} : { encryptionKey });
  const secrets = await seedSecrets(app, mock.url, mcp.httpUrl);
  const restart = app.restartOptions;
  await app.stop({ keepData: true });
  app = undefined;
  return { secrets, restart };
}

function dbTarget(restart: TestApp["restartOptions"]): { url?: string; schema?: string } {
  return testDatabaseUrl && restart.schema ? { url: testDatabaseUrl, schema: restart.schema } : {};
}

/** Asserts the running app can use every stored secret: the provider key upstream, the virtual key, the MCP header. */
async function assertSecretsWork(target: TestApp, secrets: SeededSecrets): Promise<void> {
  // A restarted gateway connects its MCP clients in the background; the tool call needs the connection.
  await target.runtime.firstConnectionsDone();
  const before = mock.requests.length;
  const answer = await sdk(target, secrets.virtualKey).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  assert.ok(answer.choices[0]);
  const upstream = mock.requests.slice(before).at(-1);
  assert.equal(upstream?.headers["authorization"], `Bearer ${secrets.providerKey}`);
  const seen = mcp.seenHeaders.length;
  const tool = await api(target, "POST", "/v1/mcp/tool/execute", { id: "call_1", type: "function", function: { name: "vault-echo", arguments: '{"text": "hi"}' } }, { authorization: `Bearer ${secrets.virtualKey}` });
  assert.equal(tool.status, 200, JSON.stringify(tool.body));
  assert.ok(mcp.seenHeaders.slice(seen).some((h) => h["x-vault-token"] === secrets.mcpHeader), "the MCP server got the stored header");
}

describe("npm run rotate-key", () => {
  test("after rotation the gateway starts with the new key and uses every secret", async () => {
    const oldKey = newKey();
    const { secrets, restart } = await seeded(oldKey);
    const next = newKey();
    const result = await rotateEncryptionKey({ dataDir: restart.dataDir ?? "", ...dbTarget(restart), currentKey: oldKey, newKey: next, logger });
    assert.equal(result.values["provider.keys"] ?? result.values["providers.keys"], 1, JSON.stringify(result.values));
    app = await startApp({ ...restart, encryptionKey: next });
    await assertSecretsWork(app, secrets);
  });

  test("after rotation the old key is refused at start", async () => {
    const oldKey = newKey();
    const { restart } = await seeded(oldKey);
    await rotateEncryptionKey({ dataDir: restart.dataDir ?? "", ...dbTarget(restart), currentKey: oldKey, newKey: newKey(), logger });
    await assert.rejects(startApp({ ...restart, encryptionKey: oldKey }), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, "failed_precondition");
      assert.match(err.message, /GW_ENCRYPTION_KEY does not match/);
      return true;
    });
  });

  test("a value that cannot be opened stops the rotation and changes nothing", async () => {
    const oldKey = newKey();
    app = await startApp({ encryptionKey: oldKey });
    const secrets = await seedSecrets(app, mock.url, mcp.httpUrl);
    const spare = await api(app, "POST", "/api/governance/virtual-keys", { name: "spare", provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] });
    assert.equal(spare.status, 200, JSON.stringify(spare.body));
    const restart = app.restartOptions;
    await app.stop({ keepData: true });
    app = undefined;
    const target = { dataDir: restart.dataDir ?? "", ...dbTarget(restart), logger };

    // The rows are re-sealed in key order: altering the last virtual key lets the rotation change others first.
    const sealedValues = async (): Promise<unknown> => {
      const store = await openStore({ ...target, encryptionKey: oldKey, keyCheck: false });
      try {
        const conn = store.orm.em.getConnection();
        return {
          vk: await conn.execute(`select id, value from virtual_key order by id`),
          provider: await conn.execute(`select name, keys from provider order by name`),
          mcp: await conn.execute(`select id, headers from mcp_client order by id`),
          check: await conn.execute(`select sealed from encryption_key_check`),
        };
      } finally {
        await store.close();
      }
    };
    const store = await openStore({ ...target, encryptionKey: oldKey });
    const conn = store.orm.em.getConnection();
    const rows = await conn.execute<{ id: string; value: string }[]>(`select id, value from virtual_key order by id desc limit 1`);
    const last = rows[0];
    assert.ok(last);
    await conn.execute(`update virtual_key set value = ? where id = ?`, [`v1:${Buffer.alloc(40, 7).toString("base64")}`, last.id]);
    await store.close();
    const snapshot = await sealedValues();

    await assert.rejects(rotateEncryptionKey({ ...target, currentKey: oldKey, newKey: newKey() }), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, "failed_precondition");
      assert.ok(err.message.includes(last.id), err.message);
      assert.match(err.message, /nothing was changed/);
      return true;
    });
    assert.deepEqual(await sealedValues(), snapshot);

    const repair = await openStore({ ...target, encryptionKey: oldKey });
    await repair.orm.em.getConnection().execute(`update virtual_key set value = ? where id = ?`, [last.value, last.id]);
    await repair.close();
    app = await startApp({ ...restart, encryptionKey: oldKey });
    await assertSecretsWork(app, secrets);
  });

  test("the CLI reads the key file, re-encrypts and writes the new key file after the commit", async () => {
    const { secrets, restart } = await seeded();
    const dataDir = restart.dataDir ?? "";
    const next = newKey();
    const { stdout } = await run(process.execPath, ["--import", "tsx", "src/store/rotate-key-cli.ts", "--data-dir", dataDir], {
      env: { ...process.env, GW_NEW_ENCRYPTION_KEY: next, GW_ENCRYPTION_KEY: "", ...(testDatabaseUrl ? { GW_DATABASE_URL: testDatabaseUrl, GW_DATABASE_SCHEMA: restart.schema ?? "" } : {}) },
    });
    assert.match(stdout, /re-encrypted \d+ secret values/);
    assert.equal((await readFile(join(dataDir, "encryption.key"), "utf8")).trim(), next);
    app = await startApp(restart);
    await assertSecretsWork(app, secrets);
  });
});
