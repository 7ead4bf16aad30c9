/**
 * Crash consistency of a gateway process: kill -9 in the middle of 200 concurrent admin writes, then a
 * restart on the same data, keeps every write that was answered 2xx (the embedded data directory opens
 * again); usage counters survive a graceful stop whole, and an abrupt kill once a flush interval has passed.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, test } from "node:test";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { testDatabaseUrl } from "../helpers/app.js";
import { servingUrl, spawnGateway, type GatewayProcess } from "../helpers/gateway-process.js";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";
import { createScratchDatabase, type ScratchDatabase } from "../helpers/scratch-database.js";

const WRITES = 200;

let mock: MockUpstream;
let dir: string;
let config: string;
let scratch: ScratchDatabase | undefined;
const running = new Set<GatewayProcess>();

/** A token limit two chat answers of the mock (13 tokens each) use up. */
const TOKEN_LIMIT = 20;

before(async () => {
  mock = await startMockOpenAi();
});

after(async () => {
  await mock?.close();
});

async function freshData(): Promise<void> {
  dir = await mkdtemp(join(tmpdir(), "gw-crash-"));
  config = join(dir, "gw.json");
  await writeFile(
    config,
    JSON.stringify({
      providers: { openai: { keys: [{ id: "oa-1", value: "sk-oa-1" }], network_config: { base_url: mock.url } } },
      governance: {
        virtual_keys: [
          {
            id: "vk-metered",
            name: "metered",
            value: "sk-gw-metered",
            provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1, rate_limit: { token_max_limit: TOKEN_LIMIT, token_reset_duration: "1h" } }],
          },
        ],
      },
    }),
  );
  scratch = testDatabaseUrl ? await createScratchDatabase(testDatabaseUrl) : undefined;
  if (!scratch) await seedEmbeddedDatabase(join(dir, "data"));
}

afterEach(async () => {
  for (const gw of running) {
    if (gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill("SIGKILL");
    await gw.exited;
  }
  running.clear();
  await scratch?.drop();
  scratch = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** Starts a gateway on the test's data and resolves with its URL. */
async function start(): Promise<{ gw: GatewayProcess; url: string }> {
  const gw = spawnGateway(process.execPath, ["--import", "tsx", "src/main.ts", "--config", config, "--port", "0", "--data-dir", join(dir, "data")], {
    GW_LOG_LEVEL: "info",
    ...(scratch ? { GW_DATABASE_URL: scratch.url } : {}),
  });
  running.add(gw);
  return { gw, url: await servingUrl(gw) };
}

async function stop(gw: GatewayProcess, signal: "SIGTERM" | "SIGKILL"): Promise<void> {
  gw.child.kill(signal);
  await gw.exited;
  running.delete(gw);
}

function chat(url: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-gw-vk": "sk-gw-metered" },
    body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
  });
}

/** Spends the key's token limit: two answers of 13 tokens each against a limit of 20. */
async function spendTokenLimit(url: string): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const res = await chat(url);
    assert.equal(res.status, 200, await res.text());
  }
  const refused = await chat(url);
  assert.equal(refused.status, 429, "the limit is used up before the restart");
}

describe(`kill -9 during ${WRITES} concurrent admin writes`, () => {
  test("keeps every write answered 2xx, and the data opens again", async (t) => {
    await freshData();
    const first = await start();
    let acknowledged = 0;
    let killed: Promise<void> | undefined;
    const outcomes = await Promise.all(
      Array.from({ length: WRITES }, async (_, i) => {
        const name = `crash-${i}`;
        try {
          const res = await fetch(`${first.url}/api/governance/virtual-keys`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ name, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] }),
          });
          await res.text();
          if (res.status >= 200 && res.status < 300) {
            // The kill lands while most writes are still in flight.
            if (++acknowledged === 20) killed = stop(first.gw, "SIGKILL");
            return { name, acknowledged: true };
          }
          return { name, acknowledged: false };
        } catch {
          return { name, acknowledged: false };
        }
      }),
    );
    await killed;
    assert.ok(killed, "the process was killed during the writes");
    const acked = outcomes.filter((o) => o.acknowledged).map((o) => o.name);
    assert.ok(acked.length >= 20 && acked.length < WRITES, `${acked.length} writes were acknowledged`);

    const second = await start();
    const listed = await fetch(`${second.url}/api/governance/virtual-keys`);
    assert.equal(listed.status, 200);
    const names = new Set(((await listed.json()) as { virtual_keys: { name: string }[] }).virtual_keys.map((k) => k.name));
    const lost = acked.filter((name) => !names.has(name));
    assert.deepEqual(lost, [], "acknowledged writes lost by the kill");
    t.diagnostic(`${acked.length} of ${WRITES} writes acknowledged before the kill, all present after the restart`);
    await stop(second.gw, "SIGTERM");
  });
});

describe("usage counters", () => {
  test("survive a graceful stop whole", async () => {
    await freshData();
    const first = await start();
    await spendTokenLimit(first.url);
    await stop(first.gw, "SIGTERM");
    const second = await start();
    const res = await chat(second.url);
    const text = await res.text();
    assert.equal(res.status, 429, text);
    assert.equal((JSON.parse(text) as { error: { type: string } }).error.type, "policy_rate_limited");
  });

  test("survive kill -9 once a flush interval has passed", async () => {
    await freshData();
    const first = await start();
    await spendTokenLimit(first.url);
    // The flush interval is 1 s; five leave room for a loaded machine.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await stop(first.gw, "SIGKILL");
    const second = await start();
    const res = await chat(second.url);
    assert.equal(res.status, 429, await res.text());
  });
});
