/**
 * A provider key's retry-after holds for the cluster: after the upstream answers one node's request with
 * 429 and retry-after, the other node skips that key too. Two gateway processes on one PostgreSQL; skipped,
 * saying why, when no PostgreSQL server answers.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { clusterSkipReason, newClusterPlace, startNodes, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster key backoff tests ${skip}`);

/** How long the second node may take to hear of the backoff (changes reach other nodes within about a second). */
const PROPAGATION_MS = 10_000;

describe("a provider key's retry-after shared by two nodes", { skip: skip ?? false }, () => {
  let place: ClusterPlace;
  let nodes: ClusterNode[] = [];
  let openai: MockUpstream;

  before(async () => {
    openai = await startMockOpenAi();
    // k2 weighs 0: it serves only when k1 cannot, so k1 is always tried first unless it is backing off.
    place = await newClusterPlace({
      providers: {
        openai: {
          keys: [
            { id: "k1", name: "k1", value: "sk-k1", models: ["gpt-4o-mini"], weight: 1 },
            { id: "k2", name: "k2", value: "sk-k2", models: ["gpt-4o-mini"], weight: 0 },
          ],
          network_config: { base_url: openai.url },
        },
      },
    });
    nodes = await startNodes(place, 2);
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

  test("a 429 with retry-after seen by one node makes the other skip the key", async () => {
    const [a, b] = nodes as [ClusterNode, ClusterNode];
    assert.deepEqual(await chat(b), ["Bearer sk-k1"]);
    openai.failNext(429, "slow down", 1, { "retry-after": "600" });
    assert.deepEqual(await chat(a), ["Bearer sk-k1", "Bearer sk-k2"]);
    const deadline = Date.now() + PROPAGATION_MS;
    let seen: string[] = [];
    while (Date.now() < deadline) {
      seen = await chat(b);
      if (seen[0] !== "Bearer sk-k1") break;
      await sleep(100);
    }
    assert.deepEqual(seen, ["Bearer sk-k2"]);
  });
});
