/**
 * A PostgreSQL outage under load, through a TCP proxy between the gateway and the server that cuts every
 * connection and refuses new ones, then lets them through again: /v1 keeps serving from memory, admin
 * writes fail with a 503 naming the database and succeed after the reconnect, and usage counted during the
 * outage reaches the database afterwards. Needs the PostgreSQL server (GW_TEST_DATABASE_URL).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { createApp, type App } from "../../src/app.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { dropSchema, parseDatabaseUrl, randomSchemaName } from "../../src/store/index.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, testDatabaseUrl } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";
import { queryDatabase } from "../helpers/scratch-database.js";

/** A TCP proxy to one address that can cut every connection and refuse new ones until restored. */
interface OutageProxy {
  readonly port: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function startProxy(host: string, port: number): Promise<OutageProxy> {
  let down = false;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(port, host);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const cut = (): void => {
    down = true;
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port: (server.address() as net.AddressInfo).port,
    cut,
    restore() {
      down = false;
    },
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const serverUrl = testDatabaseUrl;
let mock: MockUpstream;
let proxy: OutageProxy;
let app: App;
let dataDir: string;
const schema = randomSchemaName();
const logLines: string[] = [];

const CHAT = { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };
const VK = "sk-gw-outage";

function chat(): Promise<{ status: number; body: any /* JSON of any shape; tests assert on it */ }> {
  return api(app, "POST", "/v1/chat/completions", CHAT, { "x-gw-vk": VK });
}

function createKey(name: string) {
  return api(app, "POST", "/api/governance/virtual-keys", { name, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] });
}

/** The tokens the usage_counter row of the test's key holds in the database, read around the proxy. */
async function storedTokens(): Promise<number> {
  const rows = await queryDatabase<{ tokens: { used: number } | null }>(serverUrl ?? "", `select tokens from "${schema}".usage_counter where virtual_key_id = 'vk-outage'`);
  return rows[0]?.tokens?.used ?? 0;
}

/** Polls (bounded: 120 x 250 ms) until `check` holds; returns its last value. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 120 && !check(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    value = await read();
  }
  return value;
}

describe("a database outage", { skip: serverUrl ? false : "needs GW_TEST_DATABASE_URL (a proxy to a PostgreSQL server)" }, () => {
  before(async () => {
    const target = parseDatabaseUrl(serverUrl ?? "");
    mock = await startMockOpenAi();
    proxy = await startProxy(target.host, target.port);
    const proxied = new URL(serverUrl ?? "");
    proxied.hostname = "127.0.0.1";
    proxied.port = String(proxy.port);
    dataDir = await mkdtemp(join(tmpdir(), "gw-outage-"));
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
        done();
      },
    });
    const inference = inferenceOptionsFromFile({ openai: { keys: [fileKey("oa-1")], network_config: { base_url: mock.url } } }, [
      {
        id: "vk-outage",
        name: "outage",
        value: VK,
        provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1, rate_limit: { token_max_limit: 1e9, token_reset_duration: "1h" } }],
      },
    ]);
    app = await createApp({
      port: 0,
      host: "127.0.0.1",
      dataDir,
      logger: createLogger({ level: "debug", destination }),
      databaseUrl: proxied.toString(),
      databaseSchema: schema,
      inference: { ...inference, usageFlushIntervalMs: 200 },
    });
  });

  after(async () => {
    proxy?.restore();
    await app?.close();
    await proxy?.close();
    await mock?.close();
    if (serverUrl) await dropSchema(serverUrl, schema);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test("keeps /v1 serving, refuses admin writes with 503, and catches up after the reconnect", async () => {
    const before = await eventually(storedTokens, () => true);
    proxy.cut();

    // Under load: inference and admin writes at once while the database is gone.
    const [chats, writes] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, () => chat())),
      Promise.all(Array.from({ length: 5 }, (_, i) => createKey(`during-outage-${i}`))),
    ]);
    assert.deepEqual(chats.map((r) => r.status), Array(20).fill(200), "every chat is served from memory");
    for (const write of writes) {
      assert.equal(write.status, 503, JSON.stringify(write.body));
      assert.equal(write.body.error.type, "database_unavailable");
      assert.match(write.body.error.message, /database is unreachable/);
    }
    const during = chats.reduce((sum, r) => sum + (r.body.usage?.total_tokens as number), 0);

    proxy.restore();
    const written = await eventually(() => createKey("after-outage"), (res) => res.status === 200);
    assert.equal(written.status, 200, JSON.stringify(written.body));
    const stored = await eventually(storedTokens, (tokens) => tokens >= before + during);
    assert.ok(stored >= before + during, `usage counted during the outage was written: ${stored} of ${before + during} tokens stored`);
    assert.equal((await chat()).status, 200);
  });
});
