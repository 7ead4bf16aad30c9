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

describe("load balancer toggles", () => {
  let backup: MockUpstream;
  let app: TestApp;

  before(async () => {
    backup = await startMockOpenAi();
  });

  after(async () => {
    await backup?.close();
  });

  async function start(): Promise<void> {
    app = await startApp({
      inference: {
        ...inferenceOptionsFromFile(
          {
            openai: { keys: [fileKey("oa")], network_config: { base_url: openai.url } },
            backup: { keys: [fileKey("bk", { models: ["gpt-4o-mini"] })], network_config: { base_url: backup.url } },
          },
          [],
        ),
        random: () => 0,
        clock: () => now,
      },
    });
  }

  /** Opens a provider's circuit with one rate-limited request. */
  async function breakProvider(mock: MockUpstream, provider: string): Promise<void> {
    mock.failNext(429, "slow down", 1);
    await assert.rejects(sdk(app, null).chat.completions.create({ model: `${provider}/gpt-4o-mini`, messages: [{ role: "user", content: "hi" }] }));
    const { body } = await api(app, "GET", "/api/governance/routes");
    assert.equal(body.routes.find((route: { provider: string; key_id?: string }) => route.provider === provider && route.key_id === undefined).state, "failed");
  }

  /** Which mock served a pinned request, or "error". */
  async function pinned(fallbacks: string[] = []): Promise<string> {
    const before = { openai: openai.requests.length, backup: backup.requests.length };
    try {
      await sdk(app, null).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }], ...(fallbacks.length ? { fallbacks } : {}) } as never);
    } catch {
      return "error";
    }
    return backup.requests.length > before.backup ? "backup" : openai.requests.length > before.openai ? "openai" : "none";
  }

  async function toggle(fields: Record<string, boolean>): Promise<void> {
    const { status } = await api(app, "PUT", "/api/settings/load-balancer", fields);
    assert.equal(status, 200);
  }

  test("answers the five toggles with their defaults", async () => {
    await start();
    try {
      const { status, body } = await api(app, "GET", "/api/settings/load-balancer");
      assert.equal(status, 200);
      assert.deepEqual(body, {
        direction_selection_enabled: true,
        route_selection_enabled: true,
        append_fallbacks_to_pinned: false,
        reroute_failed_directions: false,
        prune_failed_fallbacks: false,
      });
    } finally {
      await app.stop();
    }
  });

  test("starts with the toggles of the config file's load_balancer_config", async () => {
    const seeded = await startApp({
      loadBalancer: { directionSelectionEnabled: false, routeSelectionEnabled: true, appendFallbacksToPinned: true, rerouteFailedDirections: false, pruneFailedFallbacks: false },
    });
    try {
      const { body } = await api(seeded, "GET", "/api/settings/load-balancer");
      assert.equal(body.direction_selection_enabled, false);
      assert.equal(body.append_fallbacks_to_pinned, true);
    } finally {
      await seeded.stop();
    }
  });

  test("a PUT changes only the toggles it sends and refuses an unknown one", async () => {
    await start();
    try {
      const { body } = await api(app, "PUT", "/api/settings/load-balancer", { prune_failed_fallbacks: true });
      assert.equal(body.prune_failed_fallbacks, true);
      assert.equal(body.route_selection_enabled, true);
      await api(app, "PUT", "/api/settings/load-balancer", { route_selection_enabled: false });
      const after = await api(app, "GET", "/api/settings/load-balancer");
      assert.equal(after.body.prune_failed_fallbacks, true);
      assert.equal(after.body.route_selection_enabled, false);
      const refused = await api(app, "PUT", "/api/settings/load-balancer", { circuit_breaker: true });
      assert.equal(refused.status, 400);
    } finally {
      await app.stop();
    }
  });

  test("a pinned request passes unchanged with the toggles off, and is re-routed with reroute_failed_directions on", async () => {
    await start();
    try {
      await breakProvider(openai, "openai");
      assert.equal(await pinned(), "openai");
      await toggle({ reroute_failed_directions: true });
      assert.equal(await pinned(), "backup");
    } finally {
      await app.stop();
    }
  });

  test("prune_failed_fallbacks removes a circuit-broken fallback", async () => {
    await start();
    try {
      await breakProvider(backup, "backup");
      openai.failNext(500, "upstream broke", 1);
      assert.equal(await pinned(["backup/gpt-4o-mini"]), "backup");
      await toggle({ prune_failed_fallbacks: true });
      openai.failNext(500, "upstream broke", 1);
      assert.equal(await pinned(["backup/gpt-4o-mini"]), "error");
    } finally {
      await app.stop();
    }
  });

  test("append_fallbacks_to_pinned adds healthy providers of the model as fallbacks", async () => {
    await start();
    try {
      openai.failNext(500, "upstream broke", 1);
      assert.equal(await pinned(), "error");
      await toggle({ append_fallbacks_to_pinned: true });
      openai.failNext(500, "upstream broke", 1);
      assert.equal(await pinned(), "backup");
    } finally {
      await app.stop();
    }
  });

  test("route_selection_enabled off keeps a circuit-broken key in the rotation", async () => {
    app = await startApp({
      inference: {
        ...inferenceOptionsFromFile({ openai: { keys: [fileKey("k1"), fileKey("k2")], network_config: { base_url: openai.url } } }, []),
        random: () => 0,
        clock: () => now,
      },
    });
    try {
      openai.failNext(500, "upstream broke", 5);
      for (let i = 0; i < 5; i++) assert.equal(await chat(app), "error");
      assert.equal(await chat(app), "Bearer sk-k2");
      await toggle({ route_selection_enabled: false });
      assert.equal(await chat(app), "Bearer sk-k1");
    } finally {
      await app.stop();
    }
  });

  test("a request that names no provider avoids a circuit-broken one and is labelled loadbalancing", async () => {
    await start();
    try {
      // The catalog lists backup first for gpt-4o-mini; with backup broken, openai serves.
      await sdk(app, null).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
      assert.equal((await api(app, "GET", "/api/governance/routing-log?limit=1")).body.entries[0].provider, "backup");
      await breakProvider(backup, "backup");
      const before = openai.requests.length;
      await sdk(app, null).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
      assert.equal(openai.requests.length, before + 1);
      const log = await api(app, "GET", "/api/governance/routing-log?limit=1");
      assert.deepEqual(log.body.entries[0].engines, ["model-catalog", "loadbalancing"]);
    } finally {
      await app.stop();
    }
  });
});

describe("session affinity", () => {
  let backup: MockUpstream;
  let app: TestApp;

  before(async () => {
    backup = await startMockOpenAi();
    app = await startApp({
      inference: {
        ...inferenceOptionsFromFile(
          {
            openai: { keys: [fileKey("k1"), fileKey("k2")], network_config: { base_url: openai.url } },
            backup: { keys: [fileKey("bk", { models: ["gpt-4o-mini"] })], network_config: { base_url: backup.url } },
          },
          [],
        ),
        random: () => 0,
        clock: () => now,
      },
    });
  });

  after(async () => {
    await app?.stop();
    await backup?.close();
  });

  /** Which mock and key served one request. */
  async function served(model: string, session: string | null, fallbacks: string[] = []): Promise<string> {
    const headers = session === null ? {} : { "x-gw-session-id": session };
    const body = { model, messages: [{ role: "user" as const, content: "hi" }], ...(fallbacks.length ? { fallbacks } : {}) };
    await sdk(app, null).chat.completions.create(body, { headers });
    // The answering call is the last one either mock received.
    const last = [openai.requests.at(-1), backup.requests.at(-1)].sort((a, b) => (b?.sequence ?? -1) - (a?.sequence ?? -1))[0];
    return last !== undefined && backup.requests.includes(last) ? "backup" : `openai ${openai.last().headers["authorization"]}`;
  }

  test("a session goes back to the provider and key that last served it", async () => {
    // The first request falls back from backup to openai, and rotates from k1 to k2 there.
    backup.failNext(500, "upstream broke", 1);
    openai.failNext(401, "bad key", 1);
    assert.equal(await served("gpt-4o-mini", "s-1"), "openai Bearer sk-k2");
    assert.equal(await served("gpt-4o-mini", "s-1"), "openai Bearer sk-k2");
    assert.equal(await served("gpt-4o-mini", null), "backup");
    assert.equal(await served("gpt-4o-mini", "s-2"), "backup");
  });

  test("a request that names its provider is not moved by its session", async () => {
    backup.failNext(500, "upstream broke", 1);
    assert.equal((await served("gpt-4o-mini", "s-3")).startsWith("openai"), true);
    // openai is in the chain as a fallback, yet the named provider stays first.
    assert.equal(await served("backup/gpt-4o-mini", "s-3", ["openai/gpt-4o-mini"]), "backup");
  });

  test("a session forgets its route after 30 minutes", async () => {
    backup.failNext(500, "upstream broke", 1);
    assert.equal((await served("gpt-4o-mini", "s-4")).startsWith("openai"), true);
    now += 31 * 60_000;
    assert.equal(await served("gpt-4o-mini", "s-4"), "backup");
  });
});
