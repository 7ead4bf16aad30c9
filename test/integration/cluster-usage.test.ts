/**
 * Usage counters of two gateway processes on one PostgreSQL: requests spent through one virtual key on both
 * nodes show up, summed, in the usage API of either node (the key's own windows and its provider config's),
 * and after both stop and one starts again, the stored counters hold the sum. Skipped, saying why, when no
 * PostgreSQL server answers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BUNDLED_PRICES } from "../../src/routing/bundled-prices.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { CLUSTER_DATABASE_URL, clusterSkipReason, eventually, newClusterPlace, startNodes, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";
import { queryDatabase } from "../helpers/scratch-database.js";

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster usage tests ${skip}`);

/** Requests sent through the first node and through the second. */
const FIRST_NODE_REQUESTS = 3;
const SECOND_NODE_REQUESTS = 2;
const ALL_REQUESTS = FIRST_NODE_REQUESTS + SECOND_NODE_REQUESTS;

/** The one message every request sends, so each costs the same. */
const MESSAGES = [{ role: "user", content: "spend" }];

/** What one request costs at the bundled gpt-4o-mini price and the tokens it uses, as the upstream reports them. */
async function oneRequest(upstream: string): Promise<{ cost: number; tokens: number }> {
  const res = await fetch(`${upstream}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-up" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: MESSAGES }),
  });
  const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
  const price = BUNDLED_PRICES["gpt-4o-mini|openai|chat"];
  assert.ok(price !== undefined, "the bundled prices have no gpt-4o-mini");
  return {
    cost: body.usage.prompt_tokens * price.input_cost_per_token + body.usage.completion_tokens * price.output_cost_per_token,
    tokens: body.usage.prompt_tokens + body.usage.completion_tokens,
  };
}

/** One chat completion with the key through a node; fails the test unless it is answered. */
async function spend(node: ClusterNode): Promise<void> {
  const res = await fetch(`${node.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-usage" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: MESSAGES }),
  });
  assert.equal(res.status, 200, await res.text());
}

interface UsageWindow {
  used: number;
  max_limit: number;
}

interface UsageLevel {
  level: string;
  id: string;
  budget?: UsageWindow;
  requests?: UsageWindow;
  tokens?: UsageWindow;
}

/** The key's usage levels as a node's usage API shows them. */
async function usageOn(node: ClusterNode): Promise<{ key: UsageLevel; config: UsageLevel }> {
  const res = await fetch(`${node.url}/api/governance/virtual-keys/vk-usage/usage`);
  const body = (await res.json()) as { levels: UsageLevel[] };
  assert.equal(res.status, 200, JSON.stringify(body));
  const key = body.levels.find((level) => level.level === "virtual_key");
  const config = body.levels.find((level) => level.level === "provider_config" && level.id === "openai");
  assert.ok(key !== undefined && config !== undefined, JSON.stringify(body));
  return { key, config };
}

/** Whether the figures are what `requests` requests spent (costs up to float rounding). */
function showsSpend(usage: { key: UsageLevel; config: UsageLevel }, one: { cost: number; tokens: number }, requests: number): boolean {
  const near = (a: number | undefined, b: number): boolean => a !== undefined && Math.abs(a - b) <= 1e-9 * Math.max(1, b);
  return (
    usage.key.requests?.used === requests &&
    near(usage.key.budget?.used, one.cost * requests) &&
    near(usage.config.budget?.used, one.cost * requests) &&
    usage.config.tokens?.used === one.tokens * requests
  );
}

describe("usage counters of two nodes on one PostgreSQL", { skip: skip ?? false }, () => {
  let place: ClusterPlace;
  const started: ClusterNode[] = [];
  let openai: MockUpstream;
  let one: { cost: number; tokens: number };

  before(async () => {
    openai = await startMockOpenAi();
    one = await oneRequest(openai.url);
    place = await newClusterPlace({
      providers: { openai: { keys: [{ id: "oa", name: "oa", value: "sk-up", models: ["gpt-4o-mini"] }], network_config: { base_url: openai.url } } },
      governance: {
        virtual_keys: [
          {
            id: "vk-usage",
            name: "usage",
            value: "sk-gw-usage",
            budget: { max_limit: 100, reset_duration: "1h" },
            rate_limit: { request_max_limit: 1000, request_reset_duration: "1h" },
            provider_configs: [
              {
                provider: "openai",
                allowed_models: ["*"],
                key_ids: ["*"],
                weight: 1,
                budgets: [{ max_limit: 100, reset_duration: "1h" }],
                rate_limit: { token_max_limit: 1_000_000, token_reset_duration: "1h" },
              },
            ],
          },
        ],
      },
    });
    started.push(...(await startNodes(place, 2)));
  });

  after(async () => {
    if (place) await stopCluster(place, started);
    await openai?.close();
  });

  test("the usage API of either node shows what both nodes spent through the key", async () => {
    const [first, second] = started as [ClusterNode, ClusterNode];
    await Promise.all([...Array.from({ length: FIRST_NODE_REQUESTS }, () => spend(first)), ...Array.from({ length: SECOND_NODE_REQUESTS }, () => spend(second))]);
    for (const node of [first, second]) {
      let last: unknown;
      const usage = await eventually("the node's usage API to show both nodes' requests", async () => {
        const now = await usageOn(node);
        last = now;
        return showsSpend(now, one, ALL_REQUESTS) ? now : undefined;
      }).catch((err: Error) => {
        // What the node showed last and what either node warned of, to tell a lost count from a slow one.
        const warnings = started.flatMap((n, i) => n.gw.output().split("\n").filter((line) => /"level":(40|50|60)/.test(line)).map((line) => `node ${i + 1}: ${line}`));
        throw new Error(`${err.message}; one request spends ${JSON.stringify(one)}; the node showed ${JSON.stringify(last)}\n${warnings.join("\n")}`);
      });
      assert.ok(showsSpend(usage, one, ALL_REQUESTS));
    }
  });

  test("after both nodes stop and one starts, the stored usage is what both spent", async () => {
    for (const node of started) {
      node.gw.child.kill("SIGTERM");
      await node.gw.exited;
    }
    const rows = await queryDatabase<{ tokens: { used: number } | null }>(CLUSTER_DATABASE_URL, `select tokens from "${place.schema}".usage_counter where virtual_key_id = 'vk-usage' and provider = 'openai'`);
    assert.equal(rows[0]?.tokens?.used, one.tokens * ALL_REQUESTS);
    const [again] = await startNodes(place, 1);
    assert.ok(again !== undefined);
    started.push(again);
    const usage = await usageOn(again);
    assert.ok(showsSpend(usage, one, ALL_REQUESTS), JSON.stringify(usage));
  });
});
