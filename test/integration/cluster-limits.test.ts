/**
 * Budgets and rate limits across three gateway processes on one PostgreSQL: a virtual key's request limit
 * holds for the cluster as a whole when requests are spent through every node at once, with the counters in
 * the database, in Redis, and in the database while the configured Redis does not answer; so does the budget
 * of a virtual key's provider config, and a budget or token limit that one request's worst case exhausts lets
 * at most one request per node through. Skipped, saying why, when no PostgreSQL server (or, for the Redis
 * case, no Redis) answers.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { after, before, describe, test } from "node:test";
import { BUNDLED_PRICES } from "../../src/routing/bundled-prices.js";
import { startCostlyUpstream } from "../fixtures/costly-upstream.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { clusterSkipReason, newClusterPlace, startNodes, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";

/** The key's request limit for the window. */
const LIMIT = 12;
/** Requests sent through each node: together three times what the key may spend. */
const PER_NODE = LIMIT;

/** The Redis the Redis case runs on. */
const REDIS_URL = process.env["GW_TEST_REDIS_URL"] || "redis://127.0.0.1:6379";

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster limit tests ${skip}`);

/** Null when Redis answers a PING, else why the Redis case is skipped. */
async function redisSkipReason(): Promise<string | null> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000 });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (err) {
    return `skipped: no Redis answers at ${REDIS_URL} (set GW_TEST_REDIS_URL): ${(err as Error).message}`;
  } finally {
    redis.disconnect();
  }
}

const redisSkip = skip ?? (await redisSkipReason());
if (redisSkip && !skip) console.log(`# cluster limit tests with Redis ${redisSkip}`);

/** Deletes the counters a test left under its prefix. */
async function dropRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 0 });
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/** A loopback port nothing listens on: a Redis that never answers. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(address !== null && typeof address === "object");
  return address.port;
}

/** The config file of every node: one provider on the mock upstream and a key limited to LIMIT requests an hour. */
function clusterConfig(upstream: string, redis?: { url: string; key_prefix: string }): Record<string, unknown> {
  return {
    ...(redis ? { redis } : {}),
    providers: { openai: { keys: [{ id: "oa", name: "oa", value: "sk-up", models: ["gpt-4o-mini"] }], network_config: { base_url: upstream } } },
    governance: {
      virtual_keys: [
        {
          id: "vk-limited",
          name: "limited",
          value: "sk-gw-limited",
          provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }],
          rate_limit: { request_max_limit: LIMIT, request_reset_duration: "1h" },
        },
      ],
    },
  };
}

/** One chat completion with the limited key; answers the HTTP status and the error type of a refusal. */
async function chat(at: ClusterNode, i: number): Promise<{ status: number; type: string | null }> {
  const res = await fetch(`${at.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-limited" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: `request ${i}` }] }),
  });
  const body = (await res.json()) as { error?: { type?: string } };
  return { status: res.status, type: body.error?.type ?? null };
}

/** Three nodes with the config; every node spends the limited key at once. */
function sharedLimitSuite(name: string, skipReason: string | null, redis: () => Promise<{ url: string; key_prefix: string } | undefined>): void {
  describe(name, { skip: skipReason ?? false }, () => {
    let place: ClusterPlace;
    let nodes: ClusterNode[] = [];
    let openai: MockUpstream;
    let redisConfig: { url: string; key_prefix: string } | undefined;

    before(async () => {
      openai = await startMockOpenAi();
      redisConfig = await redis();
      place = await newClusterPlace(clusterConfig(openai.url, redisConfig));
      nodes = await startNodes(place, 3);
    });

    after(async () => {
      if (place) await stopCluster(place, nodes);
      await openai?.close();
      if (redisConfig?.url === REDIS_URL) await dropRedisKeys(redisConfig.key_prefix);
    });

    test("accepts between the limit and the limit plus one request per node when every node spends at once", async () => {
      const sent = nodes.flatMap((node, n) => Array.from({ length: PER_NODE }, (_, i) => chat(node, n * PER_NODE + i)));
      const answers = await Promise.all(sent);
      const accepted = answers.filter((a) => a.status === 200).length;
      const refused = answers.filter((a) => a.status !== 200);
      assert.ok(accepted >= LIMIT, `accepted ${accepted} requests, fewer than the limit of ${LIMIT}`);
      assert.ok(accepted <= LIMIT + nodes.length, `accepted ${accepted} requests, more than the limit of ${LIMIT} plus one per node`);
      for (const refusal of refused) assert.deepEqual(refusal, { status: 429, type: "policy_rate_limited" });
    });
  });
}

sharedLimitSuite("a request limit shared by three nodes on one PostgreSQL", skip, async () => undefined);
// A prefix of its own, so runs sharing one Redis never see each other's counters.
sharedLimitSuite("a request limit shared by three nodes through Redis", redisSkip, async () => ({ url: REDIS_URL, key_prefix: `gw-test-${randomUUID()}:` }));
sharedLimitSuite("a request limit shared through the database while the configured Redis does not answer", skip, async () => ({
  url: `redis://127.0.0.1:${await closedPort()}`,
  key_prefix: "gw-test-down:",
}));

/** Requests a provider config's budget pays for. */
const BUDGET_REQUESTS = 10;
/** The one message every budget request sends, so each costs the same. */
const BUDGET_MESSAGES = [{ role: "user", content: "spend" }];

/** What one budget request costs at the bundled gpt-4o-mini price, from the tokens the upstream reports. */
async function costOfOneRequest(upstream: string): Promise<{ cost: number; outputTokens: number }> {
  const res = await fetch(`${upstream}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-up" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: BUDGET_MESSAGES }),
  });
  const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
  const price = BUNDLED_PRICES["gpt-4o-mini|openai|chat"];
  assert.ok(price !== undefined, "the bundled prices have no gpt-4o-mini");
  return { cost: body.usage.prompt_tokens * price.input_cost_per_token + body.usage.completion_tokens * price.output_cost_per_token, outputTokens: body.usage.completion_tokens };
}

describe("a provider config's budget shared by three nodes on one PostgreSQL", { skip: skip ?? false }, () => {
  let place: ClusterPlace;
  let nodes: ClusterNode[] = [];
  let openai: MockUpstream;
  let outputTokens = 0;

  before(async () => {
    openai = await startMockOpenAi();
    const one = await costOfOneRequest(openai.url);
    outputTokens = one.outputTokens;
    place = await newClusterPlace({
      providers: { openai: { keys: [{ id: "oa", name: "oa", value: "sk-up", models: ["gpt-4o-mini"] }], network_config: { base_url: openai.url } } },
      governance: {
        virtual_keys: [
          {
            id: "vk-budget",
            name: "budgeted",
            value: "sk-gw-budget",
            provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1, budgets: [{ max_limit: one.cost * BUDGET_REQUESTS, reset_duration: "1h" }] }],
          },
        ],
      },
    });
    nodes = await startNodes(place, 3);
  });

  after(async () => {
    if (place) await stopCluster(place, nodes);
    await openai?.close();
  });

  test("accepts at most the requests the budget pays for plus one per node when every node spends at once", async () => {
    const sent = nodes.flatMap((node) =>
      Array.from({ length: BUDGET_REQUESTS }, async () => {
        const res = await fetch(`${node.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Bearer sk-gw-budget" },
          // max_tokens as the upstream answers, so a request reserves about what it spends.
          body: JSON.stringify({ model: "gpt-4o-mini", messages: BUDGET_MESSAGES, max_tokens: outputTokens }),
        });
        const body = (await res.json()) as { error?: { type?: string } };
        return { status: res.status, type: body.error?.type ?? null };
      }),
    );
    const answers = await Promise.all(sent);
    const accepted = answers.filter((a) => a.status === 200).length;
    assert.ok(accepted > 0, "the budget accepted no request");
    assert.ok(accepted <= BUDGET_REQUESTS + nodes.length, `accepted ${accepted} requests, more than the ${BUDGET_REQUESTS} the budget pays for plus one per node`);
    for (const refusal of answers.filter((a) => a.status !== 200)) assert.deepEqual(refusal, { status: 402, type: "policy_budget_exceeded" });
  });
});

/** Requests each node sends at once against a limit one request's worst case covers. */
const BURST_PER_NODE = 5;
/** Less than one gpt-4o-mini request without max_tokens may cost (at least 4096 output tokens, about $0.0025). */
const SMALL_BUDGET = { max_limit: 0.002, reset_duration: "1h" };
/** Fewer tokens than one request without max_tokens may use. */
const SMALL_TOKEN_LIMIT = { token_max_limit: 1000, token_reset_duration: "1h" };

describe("limits one request exhausts, shared by three nodes on one PostgreSQL", { skip: skip ?? false }, () => {
  let place: ClusterPlace;
  let nodes: ClusterNode[] = [];
  let upstream: MockUpstream;
  const config = { provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 };

  before(async () => {
    upstream = await startCostlyUpstream();
    // One key per limit, so every test spends a limit no other test touched.
    const key = (id: string, extra: Record<string, unknown>) => ({ id, name: id, value: `sk-gw-${id}`, provider_configs: [config], ...extra });
    place = await newClusterPlace({
      providers: { openai: { keys: [{ id: "oa", name: "oa", value: "sk-up", models: ["gpt-4o-mini"] }], network_config: { base_url: upstream.url } } },
      governance: {
        teams: [{ id: "team-burst", name: "burst team", budget: SMALL_BUDGET }],
        virtual_keys: [
          key("vk-budget", { budget: SMALL_BUDGET }),
          key("vk-config-budget", { provider_configs: [{ ...config, budgets: [SMALL_BUDGET] }] }),
          key("vk-tokens", { rate_limit: SMALL_TOKEN_LIMIT }),
          key("vk-team", { team_id: "team-burst" }),
        ],
      },
    });
    nodes = await startNodes(place, 3);
  });

  after(async () => {
    if (place) await stopCluster(place, nodes);
    await upstream?.close();
  });

  /** Every node sends BURST_PER_NODE chats with the key at once; answers each one's status and error type. */
  async function burst(keyId: string): Promise<{ status: number; type: string | null }[]> {
    const sent = nodes.flatMap((node, n) =>
      Array.from({ length: BURST_PER_NODE }, async (_, i) => {
        const res = await fetch(`${node.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer sk-gw-${keyId}` },
          body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: `request ${n}-${i}` }] }),
        });
        const body = (await res.json()) as { error?: { type?: string } };
        return { status: res.status, type: body.error?.type ?? null };
      }),
    );
    return Promise.all(sent);
  }

  /** At least one request and at most one per node went through; every other was refused with `refusal`. */
  function assertAtMostOnePerNode(answers: { status: number; type: string | null }[], refusal: { status: number; type: string }): void {
    const accepted = answers.filter((a) => a.status === 200).length;
    assert.ok(accepted >= 1 && accepted <= nodes.length, `${accepted} of ${answers.length} concurrent requests went through, not between 1 and one per node: ${JSON.stringify(answers)}`);
    for (const refused of answers.filter((a) => a.status !== 200)) assert.deepEqual(refused, refusal);
  }

  test("lets at most one request per node through a key budget one request exhausts", async () => {
    assertAtMostOnePerNode(await burst("vk-budget"), { status: 402, type: "policy_budget_exceeded" });
  });

  test("lets at most one request per node through a provider-config budget one request exhausts", async () => {
    assertAtMostOnePerNode(await burst("vk-config-budget"), { status: 402, type: "policy_budget_exceeded" });
  });

  test("lets at most one request per node through a key token limit one request exhausts", async () => {
    assertAtMostOnePerNode(await burst("vk-tokens"), { status: 429, type: "policy_rate_limited" });
  });

  test("lets at most one request per node through a team budget one request exhausts", async () => {
    assertAtMostOnePerNode(await burst("vk-team"), { status: 402, type: "policy_budget_exceeded" });
  });
});
