/**
 * client.initial_pool_size through the real server: a provider loaded at boot, created or updated opens
 * that many keep-alive connections to its upstream before any request, and one it cannot reach only costs
 * a debug line.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

const POOL = 3;

let booted: MockUpstream;
let created: MockUpstream;
let app: TestApp;

/** Resolves once `predicate` holds; polls, so it asserts an outcome, never how long it took. */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`never happened: ${what}`);
}

before(async () => {
  booted = await startMockOpenAi();
  created = await startMockOpenAi();
  const inference = inferenceOptionsFromFile(
    {
      openai: { keys: [fileKey("oa-1")], network_config: { base_url: booted.url } },
      // Port 9 (discard) on loopback has no listener: every pre-open fails.
      groq: { keys: [fileKey("gq-1")], network_config: { base_url: "http://127.0.0.1:9" } },
    },
    [],
  );
  app = await startApp({ inference, client: { ...DEFAULT_CLIENT, initialPoolSize: POOL } });
});

after(async () => {
  await app?.stop();
  await booted?.close();
  await created?.close();
});

test("opens initial_pool_size connections to a provider loaded at boot, before any request", async () => {
  await until(() => booted.openConnections === POOL, `${POOL} connections open to the boot provider's upstream`);
  // The start-up list-models call is the gateway's own; no inference request went upstream.
  assert.deepEqual(booted.requests.filter((r) => r.path !== "/v1/models").map((r) => r.path), []);
});

test("serves a request over a connection it opened ahead", async () => {
  await until(() => booted.openConnections === POOL, `${POOL} connections open`);
  const accepted = booted.acceptedConnections;
  const res = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(booted.acceptedConnections, accepted, "no new connection was needed");
});

test("opens initial_pool_size connections to a provider created through the API", async () => {
  const res = await api(app, "POST", "/api/v1/providers", { name: "local", keys: [fileKey("lc-1")], network_config: { base_url: created.url } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  // The create also lists the provider's models, over one of these connections or a connection of its own.
  await until(() => created.acceptedConnections >= POOL, `${POOL} connections to the created provider's upstream`);
});

test("opens them again for a provider updated through the API", async () => {
  const before = booted.acceptedConnections;
  const res = await api(app, "PUT", "/api/v1/providers/openai", { network_config: { base_url: booted.url, default_request_timeout_in_seconds: 30 } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  await until(() => booted.acceptedConnections >= before + POOL, `${POOL} new connections after the update`);
});

test("logs a provider it could not pre-connect to at debug, and serves on", async () => {
  await until(
    () => app.logLines.some((line) => line.includes('"provider":"groq"') && line.includes("could not pre-open") && line.includes('"level":20')),
    "a debug line about groq's failed pre-connect",
  );
  assert.equal((await api(app, "GET", "/health")).status, 200);
});
