/**
 * Concurrent writes to one entity through the real app: writes sent together are applied one after another,
 * each on what the one before stored, so GET shows every acknowledged change and /v1 enforces what GET
 * shows (a deactivated or deleted key refused, a disabled guardrail or routing rule no longer applied). On
 * two nodes sharing a PostgreSQL schema, the same holds across them.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { randomSchemaName } from "../../src/store/index.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { eventually } from "../helpers/cluster.js";
import { fileKey } from "../helpers/inference.js";

/** Each race is run this many times: one interleaving that loses a change is enough to fail. */
const ROUNDS = 8;
/** How many copies of the other write race the one that matters. */
const RIVALS = 3;
const CONFIGS = [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"] }];

let upstream: MockUpstream;

before(async () => {
  upstream = await startMockOpenAi();
});

after(async () => {
  await upstream?.close();
});

function providers() {
  return inferenceOptionsFromFile({ openai: { keys: [fileKey("oa")], network_config: { base_url: upstream.url } } }, []);
}

async function created(app: TestApp, path: string, body: Record<string, unknown>): Promise<Record<string, any> /* the entity's JSON */> {
  const res = await api(app, "POST", path, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return Object.values(res.body as Record<string, any>)[0];
}

type Reply = Promise<{ status: number; body: unknown }>;

/** The statuses of requests sent together. */
async function together(requests: Reply[]): Promise<number[]> {
  return (await Promise.all(requests)).map((res) => res.status);
}

/**
 * Sends `one` and RIVALS copies of `rival` together, `one` first in even rounds and last in odd ones, since
 * which interleaving loses a change depends on the order; answers `one`'s status, then the rivals'.
 */
async function race(round: number, one: () => Reply, rival: () => Reply): Promise<number[]> {
  const rivals = Array.from({ length: RIVALS }, rival);
  const statuses = await together(round % 2 === 0 ? [one(), ...rivals] : [...rivals, one()]);
  return round % 2 === 0 ? statuses : [statuses[RIVALS] ?? 0, ...statuses.slice(0, RIVALS)];
}

function chat(app: TestApp, model: string, text: string, key?: string) {
  return api(app, "POST", "/v1/chat/completions", { model, messages: [{ role: "user", content: text }] }, key ? { authorization: `Bearer ${key}` } : {});
}

/** The model the upstream was asked for when `app` served a request for openai/gpt-4o. */
async function routedModel(app: TestApp): Promise<unknown> {
  const res = await chat(app, "openai/gpt-4o", "hi");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return upstream.last().body?.["model"];
}

describe("concurrent writes on one node", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({ inference: providers() });
  });

  after(async () => {
    await app?.stop();
  });

  test("a key deactivated while it is renamed is refused on /v1 and GET shows both changes", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `deactivate-${randomUUID()}`;
      const key = await created(app, "/api/governance/virtual-keys", { name, provider_configs: CONFIGS });
      const path = `/api/governance/virtual-keys/${key.id as string}`;
      const statuses = await race(round, () => api(app, "PUT", path, { is_active: false }), () => api(app, "PUT", path, { name: `${name}-renamed` }));
      assert.deepEqual(statuses, Array(RIVALS + 1).fill(200));
      const stored = (await api(app, "GET", path)).body.virtual_key;
      assert.equal(stored.is_active, false, `round ${round}`);
      assert.equal(stored.name, `${name}-renamed`, `round ${round}`);
      const res = await chat(app, "openai/gpt-4o-mini", "hi", key.value as string);
      assert.equal(res.status, 403, `round ${round}: ${JSON.stringify(res.body)}`);
    }
  });

  test("a key's budget and rate limit set at once are both stored", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const key = await created(app, "/api/governance/virtual-keys", { name: `limits-${randomUUID()}`, provider_configs: CONFIGS });
      const path = `/api/governance/virtual-keys/${key.id as string}`;
      const statuses = await together([
        api(app, "PUT", path, { budget: { max_limit: round + 1, reset_duration: "1d" } }),
        api(app, "PUT", path, { rate_limit: { request_max_limit: round + 10, request_reset_duration: "1m" } }),
      ]);
      assert.deepEqual(statuses, [200, 200]);
      const stored = (await api(app, "GET", path)).body.virtual_key;
      assert.equal(stored.budget?.max_limit, round + 1, `round ${round}: ${JSON.stringify(stored)}`);
      assert.equal(stored.rate_limit?.request_max_limit, round + 10, `round ${round}: ${JSON.stringify(stored)}`);
    }
  });

  test("a key deleted while it is updated stays deleted, in GET and on /v1", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `ghost-${randomUUID()}`;
      const key = await created(app, "/api/governance/virtual-keys", { name, provider_configs: CONFIGS });
      const path = `/api/governance/virtual-keys/${key.id as string}`;
      const [deleted, ...updated] = await race(round, () => api(app, "DELETE", path), () => api(app, "PUT", path, { name: `${name}-renamed` }));
      assert.equal(deleted, 200);
      for (const status of updated) assert.ok(status === 200 || status === 404, `round ${round}: a PUT answered ${status}`);
      assert.equal((await api(app, "GET", path)).status, 404, `round ${round}`);
      const res = await chat(app, "openai/gpt-4o-mini", "hi", key.value as string);
      assert.equal(res.status, 401, `round ${round}: ${JSON.stringify(res.body)}`);
    }
  });

  test("a guardrail disabled while it is renamed no longer blocks and GET shows both changes", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const word = `forbidden${randomUUID().slice(0, 8)}`;
      const name = `guard-${randomUUID()}`;
      const guardrail = await created(app, "/api/guardrails", { name, stages: ["input"], check: { type: "keywords", keywords: { words: [word] } }, action: "block" });
      const path = `/api/guardrails/${guardrail.id as string}`;
      const statuses = await race(round, () => api(app, "PUT", path, { enabled: false }), () => api(app, "PUT", path, { name: `${name}-renamed` }));
      assert.deepEqual(statuses, Array(RIVALS + 1).fill(200));
      const stored = (await api(app, "GET", path)).body.guardrail;
      assert.equal(stored.enabled, false, `round ${round}`);
      assert.equal(stored.name, `${name}-renamed`, `round ${round}`);
      const res = await chat(app, "openai/gpt-4o-mini", `say ${word}`);
      assert.equal(res.status, 200, `round ${round}: ${JSON.stringify(res.body)}`);
      assert.equal((await api(app, "DELETE", path)).status, 200);
    }
  });

  test("a routing rule disabled while it is renamed no longer routes and GET shows both changes", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `rule-${randomUUID()}`;
      const rule = await created(app, "/api/governance/routing-rules", { name, cel_expression: `model == "gpt-4o"`, targets: [{ provider: "openai", model: "gpt-4o-mini" }] });
      const path = `/api/governance/routing-rules/${rule.id as string}`;
      const statuses = await race(round, () => api(app, "PUT", path, { enabled: false }), () => api(app, "PUT", path, { name: `${name}-renamed` }));
      assert.deepEqual(statuses, Array(RIVALS + 1).fill(200));
      const stored = (await api(app, "GET", path)).body.routing_rule;
      assert.equal(stored.enabled, false, `round ${round}`);
      assert.equal(stored.name, `${name}-renamed`, `round ${round}`);
      assert.equal(await routedModel(app), "gpt-4o", `round ${round}: the disabled rule still routed the request`);
      assert.equal((await api(app, "DELETE", path)).status, 200);
    }
  });

  test("two tool manager settings changed at once are both kept", async () => {
    const path = "/api/settings/mcp/tool-manager-config";
    for (let round = 0; round < ROUNDS; round++) {
      const statuses = await together([api(app, "PUT", path, { max_agent_depth: round + 2 }), api(app, "PUT", path, { tool_execution_timeout: `${round + 20}s` })]);
      assert.deepEqual(statuses, [200, 200]);
      const stored = (await api(app, "GET", path)).body.config;
      assert.equal(stored.max_agent_depth, round + 2, `round ${round}: ${JSON.stringify(stored)}`);
      assert.equal(stored.tool_execution_timeout, `${round + 20}s`, `round ${round}: ${JSON.stringify(stored)}`);
    }
  });

  test("a routing rule deleted while it is updated stays deleted, in GET and on /v1", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `gone-rule-${randomUUID()}`;
      const rule = await created(app, "/api/governance/routing-rules", { name, cel_expression: `model == "gpt-4o"`, targets: [{ provider: "openai", model: "gpt-4o-mini" }] });
      const path = `/api/governance/routing-rules/${rule.id as string}`;
      const [deleted, ...updated] = await race(round, () => api(app, "DELETE", path), () => api(app, "PUT", path, { name: `${name}-renamed` }));
      assert.equal(deleted, 200);
      for (const status of updated) assert.ok(status === 200 || status === 404, `round ${round}: a PUT answered ${status}`);
      assert.equal((await api(app, "GET", path)).status, 404, `round ${round}`);
      assert.equal(await routedModel(app), "gpt-4o", `round ${round}: the deleted rule still routed the request`);
    }
  });
});

describe("concurrent writes on two nodes", { skip: testDatabaseUrl ? false : "needs a PostgreSQL server: set GW_TEST_DATABASE_URL" }, () => {
  let first: TestApp;
  let second: TestApp;

  before(async () => {
    const shared = { schema: randomSchemaName(), encryptionKey: randomBytes(32).toString("base64"), inference: providers() };
    first = await startApp(shared);
    second = await startApp(shared);
  });

  after(async () => {
    // The schema is shared: only the last node to stop drops it.
    await second?.stop({ keepData: true });
    if (second) await rm(second.dataDir, { recursive: true, force: true });
    await first?.stop();
  });

  test("a key's budget and rate limit set at once through different nodes are both stored", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const key = await created(first, "/api/governance/virtual-keys", { name: `nodes-${randomUUID()}`, provider_configs: CONFIGS });
      const path = `/api/governance/virtual-keys/${key.id as string}`;
      const statuses = await together([
        api(first, "PUT", path, { budget: { max_limit: round + 1, reset_duration: "1d" } }),
        api(second, "PUT", path, { rate_limit: { request_max_limit: round + 10, request_reset_duration: "1m" } }),
      ]);
      assert.deepEqual(statuses, [200, 200]);
      const stored = (await api(first, "GET", path)).body.virtual_key;
      assert.equal(stored.budget?.max_limit, round + 1, `round ${round}: ${JSON.stringify(stored)}`);
      assert.equal(stored.rate_limit?.request_max_limit, round + 10, `round ${round}: ${JSON.stringify(stored)}`);
    }
  });

  test("a routing rule disabled on one node while the other renames it stops routing on both", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `nodes-rule-${randomUUID()}`;
      const rule = await created(first, "/api/governance/routing-rules", { name, cel_expression: `model == "gpt-4o"`, targets: [{ provider: "openai", model: "gpt-4o-mini" }] });
      await eventually(`the rule routing on ${second.url}`, async () => ((await routedModel(second)) === "gpt-4o-mini" ? true : undefined));
      const path = `/api/governance/routing-rules/${rule.id as string}`;
      const statuses = await together([api(first, "PUT", path, { enabled: false }), api(second, "PUT", path, { name: `${name}-renamed` })]);
      assert.deepEqual(statuses, [200, 200]);
      const stored = (await api(second, "GET", path)).body.routing_rule;
      assert.equal(stored.enabled, false, `round ${round}`);
      assert.equal(stored.name, `${name}-renamed`, `round ${round}`);
      for (const node of [first, second]) {
        await eventually(`the disabled rule ignored on ${node.url}`, async () => ((await routedModel(node)) === "gpt-4o" ? true : undefined));
      }
      assert.equal((await api(first, "DELETE", path)).status, 200);
    }
  });

  test("a key deactivated on one node while the other renames it is refused on both", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `nodes-deactivate-${randomUUID()}`;
      const key = await created(first, "/api/governance/virtual-keys", { name, provider_configs: CONFIGS });
      const path = `/api/governance/virtual-keys/${key.id as string}`;
      const statuses = await together([api(first, "PUT", path, { is_active: false }), api(second, "PUT", path, { name: `${name}-renamed` })]);
      assert.deepEqual(statuses, [200, 200]);
      const stored = (await api(second, "GET", path)).body.virtual_key;
      assert.equal(stored.is_active, false, `round ${round}`);
      assert.equal(stored.name, `${name}-renamed`, `round ${round}`);
      for (const node of [first, second]) {
        await eventually(`the deactivated key refused on ${node.url}`, async () => ((await chat(node, "openai/gpt-4o-mini", "hi", key.value as string)).status === 403 ? true : undefined));
      }
    }
  });
});
