/**
 * What the serving thread does in the background while it serves (the usage counters' writes, the
 * provider's model list), a first start that applies the config file and a restart whose file did not change,
 * enter no AsyncLocalStorage: on Node 20 the first store entered turns promise hooks
 * on for the whole process, a cost every request pays from then on. Entries are counted by wrapping the
 * public `run` and `enterWith` for this test only.
 */
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { inferenceOptionsFromFile, type InferenceOptions } from "../../src/services/inference/config.js";
import { UsageRecord } from "../../src/store/index.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

/** Short, so the counters are written while the test counts. */
const FLUSH_MS = 20;

/** Where each entry came from, while counting. */
const entries: string[] = [];
let counting = false;
const original = { run: AsyncLocalStorage.prototype.run, enterWith: AsyncLocalStorage.prototype.enterWith };

function countEntries(): void {
  // Wrapped in place for this test only: the entries are what the assertion is about.
  AsyncLocalStorage.prototype.run = function run(this: AsyncLocalStorage<unknown>, ...args: Parameters<AsyncLocalStorage<unknown>["run"]>) {
    if (counting) entries.push(new Error("entered").stack ?? "");
    return original.run.apply(this, args);
  } as AsyncLocalStorage<unknown>["run"];
  AsyncLocalStorage.prototype.enterWith = function enterWith(this: AsyncLocalStorage<unknown>, store: unknown) {
    if (counting) entries.push(new Error("entered").stack ?? "");
    original.enterWith.call(this, store);
  };
}

let upstream: MockUpstream;
let app: TestApp;
let inference: InferenceOptions;

before(async () => {
  countEntries();
  upstream = await startMockOpenAi();
  const providers = { openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: upstream.url } } };
  const virtualKey = {
    id: "vk-quiet",
    name: "quiet",
    value: "sk-gw-quiet",
    provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1, budgets: [{ max_limit: 1000, reset_duration: "1h" }], rate_limit: { token_max_limit: 1_000_000, token_reset_duration: "1h" } }],
  };
  const rules = [{ id: "rule-quiet", name: "quiet rule", cel_expression: `headers["x-never"] == "1"`, targets: [{ provider: "openai" }] }];
  const groups = { business_unit: [], customer: [], team: [{ id: "team-quiet", name: "quiet team" }] };
  inference = { ...inferenceOptionsFromFile(providers, [{ ...virtualKey, team_id: "team-quiet" }], rules, groups), usageFlushIntervalMs: FLUSH_MS };
  app = await startApp({ inference });
});

after(async () => {
  counting = false;
  AsyncLocalStorage.prototype.run = original.run;
  AsyncLocalStorage.prototype.enterWith = original.enterWith;
  await app?.stop();
  await upstream?.close();
});

/** Sends a few requests through the virtual key, then waits until their usage is in the store. */
async function serveAndFlush(target: TestApp): Promise<void> {
  // Read before the requests: the flusher may write their usage before a read after them would run.
  const before = (await target.store.fork().findOne(UsageRecord, { virtualKeyId: "vk-quiet", provider: "openai" }))?.tokens?.used ?? 0;
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${target.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-gw-quiet" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "count me" }] }),
    });
    assert.equal(res.status, 200, await res.text());
  }
  // Bounded: until the counters these requests changed are in the store.
  let written = false;
  for (const until = Date.now() + 5_000; Date.now() < until && !written; await sleep(FLUSH_MS)) {
    const stored = await target.store.fork().findOne(UsageRecord, { virtualKeyId: "vk-quiet", provider: "openai" });
    written = (stored?.tokens?.used ?? 0) > before;
  }
  assert.ok(written, "the usage counters were never written");
}

test("serving requests and writing their usage enters no AsyncLocalStorage", async () => {
  counting = true;
  await serveAndFlush(app);
  counting = false;
  assert.deepEqual(entries, []);
});

test("a first start that applies its config file enters no AsyncLocalStorage", async () => {
  entries.length = 0;
  counting = true;
  const fresh = await startApp({ inference });
  counting = false;
  try {
    assert.deepEqual(entries, []);
    // What it wrote serves: the provider, the key and its team as the file declares them.
    await serveAndFlush(fresh);
  } finally {
    await fresh.stop();
  }
});

test("a restart whose config file did not change enters no AsyncLocalStorage", async () => {
  await app.stop({ keepData: true });
  entries.length = 0;
  counting = true;
  app = await startApp(app.restartOptions);
  await serveAndFlush(app);
  counting = false;
  assert.deepEqual(entries, []);
});
