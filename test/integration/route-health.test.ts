/**
 * Adaptive load balancing at the key level, through /v1 with the official SDK: a key whose upstream
 * fails opens its circuit and traffic moves to the other key; after the cool-down it is probed again and
 * returns to healthy. Time is a fake clock the test moves; the dice always pick the first eligible key.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { fileKey, sdk } from "../helpers/inference.js";

let openai: MockUpstream;
let now = Date.UTC(2026, 0, 1);

before(async () => {
  openai = await startMockOpenAi();
});

after(async () => {
  await openai?.close();
});

/** Sends one chat; answers the key the upstream saw, or "error" when the request failed. */
async function chat(app: TestApp): Promise<string> {
  try {
    await sdk(app, null).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  } catch {
    return "error";
  }
  return openai.last().headers["authorization"] ?? "";
}

describe("key health", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({
      inference: {
        ...inferenceOptionsFromFile({ openai: { keys: [fileKey("k1"), fileKey("k2")], network_config: { base_url: openai.url } } }, []),
        random: () => 0,
        clock: () => now,
      },
    });
  });

  after(async () => {
    await app?.stop();
  });

  test("a key failing 60% goes failed, then recovering after the cool-down, then healthy", async () => {
    // The first key serves while healthy; three of every five of its calls fail.
    let failed = false;
    for (let i = 0; i < 40 && !failed; i++) {
      if (i % 5 < 3) openai.failNext(500, "upstream broke", 1);
      const served = await chat(app);
      if (served === "Bearer sk-k2") failed = true;
      now += 100;
    }
    assert.ok(failed, "traffic moved to k2");
    assert.ok(app.logLines.some((line) => line.includes('"to":"failed"') && line.includes('"key_id":"k1"')));
    const routes = await api(app, "GET", "/api/governance/routes");
    assert.equal(routes.status, 200);
    const k1 = routes.body.routes.find((route: { key_id?: string }) => route.key_id === "k1");
    assert.equal(k1.state, "failed");
    assert.equal(k1.weight, 0);
    assert.equal(k1.key_name, "k1");
    assert.ok(k1.error_rate > 0.05);
    const metrics = await fetch(`${app.url}/metrics`).then((res) => res.text());
    assert.match(metrics, /gw_route_state\{provider="openai",key_id="k1",key_name="k1",state="failed"\} 1/);
    for (let i = 0; i < 3; i++) assert.equal(await chat(app), "Bearer sk-k2");

    now += 15_000;
    // Recovering: k1 is probed again (the dice pick the first key with any weight).
    assert.equal(await chat(app), "Bearer sk-k1");
    assert.ok(app.logLines.some((line) => line.includes('"to":"recovering"') && line.includes('"key_id":"k1"')));
    for (let i = 0; i < 4; i++) assert.equal(await chat(app), "Bearer sk-k1");
    assert.ok(app.logLines.some((line) => line.includes('"to":"healthy"') && line.includes('"key_id":"k1"')));
  });

  test("lists a provider route without a key and each key route with its name", async () => {
    const { status, body } = await api(app, "GET", "/api/governance/routes");
    assert.equal(status, 200);
    const provider = body.routes.find((route: { provider: string; key_id?: string }) => route.provider === "openai" && route.key_id === undefined);
    assert.ok(provider, "the provider route is listed");
    assert.equal(provider.key_name, undefined);
    const k2 = body.routes.find((route: { key_id?: string }) => route.key_id === "k2");
    assert.equal(k2.key_name, "k2");
    assert.equal(k2.state, "healthy");
    assert.equal(k2.weight, 1);
  });
});
