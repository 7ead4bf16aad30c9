/**
 * A provider key's retry-after holds for the cluster: after the upstream answers one node's request with
 * 429 and retry-after, the other nodes skip that key too, within the bound the README states (1 s), also
 * while they are busy applying a slow configuration change. Three gateway processes on one PostgreSQL;
 * skipped, saying why, when no PostgreSQL server answers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { clusterSkipReason, inEffectWithin, newClusterPlace, startNodes, startSlowChange, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster key backoff tests ${skip}`);

/** How long after the 429 was answered another node may still send to the key: the documented bound. */
const PROPAGATION_BOUND_MS = 1_000;
/** The retry-after of each test's 429: it outlasts every test of the file. */
const RETRY_AFTER_S = 120;

describe("a provider key's retry-after shared by three nodes", { skip: skip ?? false }, () => {
  let place: ClusterPlace;
  let nodes: ClusterNode[] = [];
  let openai: MockUpstream;

  before(async () => {
    openai = await startMockOpenAi();
    // k2 and k3 weigh 0: they serve only when k1 cannot, in that order (zero weights keep the configured order).
    place = await newClusterPlace({
      providers: {
        openai: {
          keys: [
            { id: "k1", name: "k1", value: "sk-k1", models: ["gpt-4o-mini"], weight: 1 },
            { id: "k2", name: "k2", value: "sk-k2", models: ["gpt-4o-mini"], weight: 0 },
            { id: "k3", name: "k3", value: "sk-k3", models: ["gpt-4o-mini"], weight: 0 },
          ],
          network_config: { base_url: openai.url },
        },
      },
    });
    nodes = await startNodes(place, 3);
  });

  after(async () => {
    if (place) await stopCluster(place, nodes);
    await openai?.close();
  });

  /** Sends one chat through a node; answers the keys the upstream saw, in order. */
  async function chat(node: ClusterNode): Promise<string[]> {
    const before = openai.requests.length;
    const res = await fetch(`${node.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(res.status, 200, await res.text());
    return openai.requests.slice(before).map((request) => request.headers["authorization"] ?? "");
  }

  /** Sends a chat through `node` and answers true when it stayed off `key`. */
  const avoids = (node: ClusterNode, key: string) => async () => !(await chat(node)).includes(`Bearer ${key}`);

  /**
   * Has node A's request to `key` answered 429 with retry-after, then checks that B and C stop sending to
   * it within the bound and stay off it.
   */
  async function backOffAndCheck(key: string): Promise<void> {
    const [a, b, c] = nodes as [ClusterNode, ClusterNode, ClusterNode];
    openai.failNext(429, "slow down", 1, { "retry-after": String(RETRY_AFTER_S) });
    const seenOnA = await chat(a);
    // Node A has answered, so it recorded the backoff (before it rotated to the next key).
    const recordedBy = Date.now();
    assert.equal(seenOnA[0], `Bearer ${key}`);
    assert.equal(seenOnA.length, 2, "node A rotated to another key");
    await Promise.all([b, c].map((node) => inEffectWithin(`the backoff of ${key} on ${node.url}`, recordedBy, PROPAGATION_BOUND_MS, avoids(node, key))));
    for (const node of [a, b, c]) assert.ok(await avoids(node, key)(), `${node.url} went back to the backed-off key`);
  }

  test("stops other nodes sending to a key backed off by a 429 on one node", async () => {
    const [, b, c] = nodes as [ClusterNode, ClusterNode, ClusterNode];
    assert.deepEqual(await chat(b), ["Bearer sk-k1"]);
    assert.deepEqual(await chat(c), ["Bearer sk-k1"]);
    await backOffAndCheck("sk-k1");
  });

  test("stops other nodes sending to a key backed off by a 429 while they apply a slow configuration change", async () => {
    const [, b, c] = nodes as [ClusterNode, ClusterNode, ClusterNode];
    // k1 backs off from the test above; k2 is the key every node serves with now.
    assert.deepEqual(await chat(b), ["Bearer sk-k2"]);
    assert.deepEqual(await chat(c), ["Bearer sk-k2"]);
    const slow = await startSlowChange(c, nodes.length);
    try {
      await backOffAndCheck("sk-k2");
    } finally {
      await slow.release();
    }
  });
});
