/**
 * Pricing sync through the real server: pricing_url downloaded at start, served from memory by
 * GET /api/v1/pricing, forced by POST /api/v1/pricing/sync, failures and bad files keeping the prices,
 * the stored copy used after a restart, and the worker downloading again after sync_interval.
 */
import assert from "node:assert/strict";
import { open, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { startPricingServer, type PricingServer } from "../fixtures/pricing-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const FAST_RETRIES = { retryDelaysMs: [5, 5, 5] };
const DAY_MS = 86_400_000;

function sheet(inputCost: number): Record<string, unknown> {
  return {
    sample_spec: { litellm_provider: "one of the providers", max_tokens: "LEGACY parameter" },
    "gpt-test": { litellm_provider: "openai", mode: "chat", input_cost_per_token: inputCost, output_cost_per_token: 4e-6, max_input_tokens: 128000, max_output_tokens: 16384 },
    "openrouter/openai/gpt-test": { litellm_provider: "openrouter", mode: "chat", input_cost_per_token: 3e-6, output_cost_per_token: 5e-6 },
  };
}

async function priceOf(app: TestApp, provider: string, model: string): Promise<{ source: string; cost: number | undefined }> {
  const res = await api(app, "GET", `/api/v1/pricing?provider=${provider}&model=${encodeURIComponent(model)}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { source: res.body.source, cost: res.body.entries[0]?.input_cost_per_token };
}

function warned(app: TestApp, pattern: RegExp): boolean {
  return app.logLines.some((line) => {
    const parsed = JSON.parse(line) as { level: number; msg: string };
    return parsed.level === 40 && pattern.test(parsed.msg);
  });
}

describe("pricing sync from an http pricing_url", () => {
  let server: PricingServer;
  let app: TestApp;
  before(async () => {
    server = await startPricingServer({ kind: "json", body: sheet(1e-6) });
    app = await startApp({ pricing: { url: server.url, syncIntervalMs: DAY_MS }, pricingTiming: FAST_RETRIES });
  });
  after(async () => {
    await app.stop();
    await server.close();
  });

  test("downloads the datasheet at start and serves its prices with source url", async () => {
    const res = await api(app, "GET", "/api/v1/pricing?provider=openai&model=gpt-test");
    assert.equal(res.status, 200);
    assert.equal(res.body.source, "url");
    assert.ok(!Number.isNaN(Date.parse(res.body.synced_at)));
    assert.deepEqual(res.body.entries, [
      { provider: "openai", model: "gpt-test", mode: "chat", input_cost_per_token: 1e-6, output_cost_per_token: 4e-6, max_input_tokens: 128000, max_output_tokens: 16384 },
    ]);
  });

  test("strips the provider prefix of a provider/model key", async () => {
    assert.equal((await priceOf(app, "openrouter", "openai/gpt-test")).cost, 3e-6);
  });

  test("a failing download is tried 4 times, answers 503 naming the status and keeps the prices", async () => {
    server.answer({ kind: "status", status: 500 });
    const before = server.hits;
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 503);
    assert.equal(res.body.error.type, "pricing_sync_failed");
    assert.match(res.body.error.message, /HTTP 500.*after 4 tries/);
    assert.equal(server.hits - before, 4);
    assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 1e-6);
  });

  test("a changed datasheet replaces the prices on POST /api/v1/pricing/sync", async () => {
    server.answer({ kind: "json", body: sheet(2e-6) });
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "success");
    assert.equal(res.body.models_count, 2);
    assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 2e-6);
  });

  test("a file that is not JSON is refused with a warning naming the problem and the prices kept", async () => {
    server.answer({ kind: "text", body: "<html>not json</html>" });
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 503);
    assert.match(res.body.error.message, /not JSON/);
    assert.ok(warned(app, /pricing sync failed: the pricing file is refused: the file is not JSON/));
    assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 2e-6);
  });

  test("a file with a wrongly typed price is refused naming the entry and field", async () => {
    server.answer({ kind: "json", body: { "gpt-test": { litellm_provider: "openai", input_cost_per_token: "cheap" } } });
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 503);
    assert.match(res.body.error.message, /entry "gpt-test"\.input_cost_per_token must be a number/);
    assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 2e-6);
  });

  test("a file that is an array is refused", async () => {
    server.answer({ kind: "json", body: [1, 2] });
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 503);
    assert.match(res.body.error.message, /one JSON object keyed by model, got an array/);
  });

  test("a 100 MB answer is refused from its declared size", async () => {
    server.answer({ kind: "declared-size", bytes: 100 * 1024 * 1024 });
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 503);
    assert.match(res.body.error.message, /larger than the 32 MiB pricing file limit/);
    assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 2e-6);
  });

  test("an answer without a declared size is cut off once it passes the limit", async () => {
    server.answer({ kind: "stream", bytes: 40 * 1024 * 1024 });
    const res = await api(app, "POST", "/api/v1/pricing/sync", {});
    assert.equal(res.status, 503);
    assert.match(res.body.error.message, /larger than the 32 MiB pricing file limit/);
    assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 2e-6);
  });

  test("a restart whose download fails serves the stored copy", async () => {
    server.answer({ kind: "status", status: 503 });
    await app.stop({ keepData: true });
    // sync_interval 0: the stored copy is due at once, so the start tries (and fails) to download.
    app = await startApp({ ...app.restartOptions, pricing: { url: server.url, syncIntervalMs: 0 }, pricingTiming: FAST_RETRIES });
    const price = await priceOf(app, "openai", "gpt-test");
    assert.deepEqual(price, { source: "stored", cost: 2e-6 });
  });
});

describe("pricing sync worker and file:// URLs", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-pricing-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("the worker downloads again once sync_interval has passed", async () => {
    const server = await startPricingServer({ kind: "json", body: sheet(1e-6) });
    const app = await startApp({ pricing: { url: server.url, syncIntervalMs: 50 }, pricingTiming: { ...FAST_RETRIES, tickMs: 50 } });
    try {
      assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 1e-6);
      server.answer({ kind: "json", body: sheet(7e-6) });
      let cost = (await priceOf(app, "openai", "gpt-test")).cost;
      // Bounded: 200 polls of 50 ms.
      for (let i = 0; i < 200 && cost !== 7e-6; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        cost = (await priceOf(app, "openai", "gpt-test")).cost;
      }
      assert.equal(cost, 7e-6);
    } finally {
      await app.stop();
      await server.close();
    }
  });

  test("reads a file:// pricing_url", async () => {
    const file = join(dir, "prices.json");
    await writeFile(file, JSON.stringify(sheet(9e-6)));
    const app = await startApp({ pricing: { url: pathToFileURL(file).href, syncIntervalMs: DAY_MS } });
    try {
      assert.deepEqual(await priceOf(app, "openai", "gpt-test"), { source: "url", cost: 9e-6 });
    } finally {
      await app.stop();
    }
  });

  test("a 100 MB file:// datasheet is refused before reading and the bundled prices stay", async () => {
    const file = join(dir, "huge.json");
    // A sparse file: 100 MB by size, nothing written.
    const handle = await open(file, "w");
    await handle.truncate(100 * 1024 * 1024);
    await handle.close();
    const app = await startApp({ pricing: { url: pathToFileURL(file).href, syncIntervalMs: DAY_MS } });
    try {
      assert.ok(warned(app, /pricing sync failed: .*huge\.json \(104857600 bytes\) is larger than the 32 MiB pricing file limit; keeping the bundled prices/));
      const res = await api(app, "GET", "/api/v1/pricing?provider=openai&model=gpt-4o-mini");
      assert.equal(res.body.source, "bundled");
      assert.equal(res.body.entries.length, 1);
    } finally {
      await app.stop();
    }
  });

  test("a config reload with a new pricing_url downloads it, and one without a URL goes back to the bundled prices", async () => {
    const first = join(dir, "first.json");
    const second = join(dir, "second.json");
    await writeFile(first, JSON.stringify(sheet(1e-6)));
    await writeFile(second, JSON.stringify(sheet(5e-6)));
    const app = await startApp({ pricing: { url: pathToFileURL(first).href, syncIntervalMs: DAY_MS } });
    try {
      assert.equal((await priceOf(app, "openai", "gpt-test")).cost, 1e-6);
      await app.reload({ pricing: { url: pathToFileURL(second).href, syncIntervalMs: DAY_MS } });
      let cost = (await priceOf(app, "openai", "gpt-test")).cost;
      // Bounded: 200 polls of 50 ms; the download runs in the background.
      for (let i = 0; i < 200 && cost !== 5e-6; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        cost = (await priceOf(app, "openai", "gpt-test")).cost;
      }
      assert.equal(cost, 5e-6);
      await app.reload({});
      assert.deepEqual(await priceOf(app, "openai", "gpt-test"), { source: "bundled", cost: undefined });
    } finally {
      await app.stop();
    }
  });

  test("without pricing_url, POST /api/v1/pricing/sync answers 409 saying the bundled datasheet is in use", async () => {
    const app = await startApp();
    try {
      const res = await api(app, "POST", "/api/v1/pricing/sync", {});
      assert.equal(res.status, 409);
      assert.equal(res.body.error.type, "pricing_sync_failed");
      assert.match(res.body.error.message, /pricing_url is not set/);
    } finally {
      await app.stop();
    }
  });
});
