/**
 * The usage history: requests through /v1 are counted per minute, written to usage_minute by the usage
 * flush, and served by GetUsageHistory over REST and Connect with totals, latency percentiles and the
 * top keys and models; ranges pick their step; an unknown range is a 400; buckets past the retention are swept.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { RETENTION_MS, UsageHistoryStore } from "../../src/inference/usage-history-store.js";
import { UsageMinuteRecord } from "../../src/store/index.js";
import { UsageHistory, emptyBucket } from "../../src/telemetry/usage-history.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { fileKey, sdk } from "../helpers/inference.js";

const KEY = "sk-gw-history";
let openai: MockUpstream;
let app: TestApp;

before(async () => {
  openai = await startMockOpenAi();
  app = await startApp({
    inference: inferenceOptionsFromFile({ openai: { keys: [fileKey("k1")], network_config: { base_url: openai.url } } }, [
      { id: "vk-history", name: "history-bot", value: KEY, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"] }] },
    ]),
  });
  const client = sdk(app, KEY);
  for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: `hi ${i}` }] });
});

after(async () => {
  await app?.stop();
  await openai?.close();
});

test("the last hour counts the requests, their tokens and latency, and names the key and model", async () => {
  const res = await api(app, "GET", "/api/governance/usage-history?range=1h");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.range, "1h");
  assert.equal(res.body.step_seconds, 60);
  assert.equal(res.body.points.length, 60);
  const totals = res.body.totals;
  assert.equal(Number(totals.requests), 3);
  assert.equal(Number(totals.errors), 0);
  assert.equal(totals.error_ratio, 0);
  assert.ok(Number(totals.input_tokens) > 0 && Number(totals.output_tokens) > 0, JSON.stringify(totals));
  assert.ok(totals.p50_latency_ms > 0 && totals.p95_latency_ms >= totals.p50_latency_ms, JSON.stringify(totals));
  const summed = res.body.points.reduce((n: number, p: { requests: string }) => n + Number(p.requests), 0);
  assert.equal(summed, 3);
  assert.deepEqual(res.body.top_keys.map((t: { name: string; requests: string }) => [t.name, Number(t.requests)]), [["history-bot", 3]]);
  assert.deepEqual(res.body.top_models.map((t: { name: string }) => t.name), ["openai/gpt-4o-mini"]);
});

test("a failed request counts as an error", async () => {
  const before = (await clientFor(GovernanceService, app.url, "connect").getUsageHistory({ range: "1h" })).totals;
  const refused = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [] }, { authorization: `Bearer ${KEY}` });
  assert.ok(refused.status >= 400, JSON.stringify(refused.body));
  const after = (await clientFor(GovernanceService, app.url, "connect").getUsageHistory({ range: "1h" })).totals;
  assert.ok(before && after);
  assert.equal(after.errors, before.errors + 1n);
  assert.equal(after.requests, before.requests + 1n);
  assert.ok(after.errorRatio > 0);
});

test("the day and the week have coarser steps", async () => {
  const day = await api(app, "GET", "/api/governance/usage-history?range=24h");
  assert.equal(day.body.step_seconds, 900);
  assert.equal(day.body.points.length, 96);
  const week = await api(app, "GET", "/api/governance/usage-history?range=7d");
  assert.equal(week.body.step_seconds, 7200);
  assert.equal(week.body.points.length, 84);
  assert.ok(Number(week.body.totals.requests) >= 3);
});

test("an unknown range is a 400 naming the field", async () => {
  const res = await api(app, "GET", "/api/governance/usage-history?range=2w");
  assert.equal(res.status, 400);
  assert.match(res.body.error.message, /range/);
});

test("the usage flush writes the minute buckets to the database", async () => {
  const deadline = Date.now() + 30_000;
  let requests = 0;
  while (requests < 3) {
    assert.ok(Date.now() < deadline, "no usage_minute row counts the requests");
    const rows = await app.store.fork().find(UsageMinuteRecord, {});
    requests = rows.reduce((n, r) => n + r.requests, 0);
    if (requests < 3) await new Promise((resolve) => setTimeout(resolve, 200));
  }
});

test("buckets older than the retention are swept and newer ones stay", async () => {
  const now = Date.now();
  const em = app.store.fork();
  const row = (nodeId: string, minute: number) => {
    const b = emptyBucket(minute);
    return em.create(UsageMinuteRecord, { nodeId, minute: new Date(minute), requests: 7, errors: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, latency: b.latency, keys: {}, models: {}, tools: {} });
  };
  row("old-node", Math.floor((now - RETENTION_MS - 3_600_000) / 60_000) * 60_000);
  row("old-node", Math.floor((now - 3_600_000) / 60_000) * 60_000);
  await em.flush();
  const swept = await new UsageHistoryStore(app.store, new UsageHistory(), () => now).sweep();
  assert.equal(swept, 1);
  const left = await app.store.fork().find(UsageMinuteRecord, { nodeId: "old-node" });
  assert.equal(left.length, 1);
  assert.ok(left[0] && left[0].minute.getTime() > now - RETENTION_MS);
});

test("a model name holding a NUL character is written under U+FFFD, not refused with the minute's row", async () => {
  const history = new UsageHistory();
  history.request("nul-key", "openai/gpt\u0000x", true);
  await new UsageHistoryStore(app.store, history).write();
  const rows = await app.store.fork().find(UsageMinuteRecord, { nodeId: history.nodeId });
  assert.equal(rows.length, 1);
  assert.deepEqual(Object.keys(rows[0]?.models ?? {}), ["openai/gpt\uFFFDx"]);
});
