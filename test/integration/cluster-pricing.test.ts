/**
 * The pricing datasheet on a cluster: only the oldest live node downloads pricing_url; nodes that join
 * serve the copy it stored, and take up a newer copy as soon as it is stored. Skipped, saying why, when no
 * PostgreSQL server answers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startPricingServer, type PricingServer } from "../fixtures/pricing-server.js";
import { api } from "../helpers/app.js";
import { clusterSkipReason, eventually, newClusterPlace, startNodes, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster pricing tests ${skip}`);

function sheet(inputCost: number): Record<string, unknown> {
  return { "gpt-test": { litellm_provider: "openai", mode: "chat", input_cost_per_token: inputCost, output_cost_per_token: 4e-6 } };
}

/** The price a node serves for openai/gpt-test, with where it came from. */
async function priceOn(at: ClusterNode): Promise<{ source: string; cost: number | undefined }> {
  const res = await api(at, "GET", "/api/v1/pricing?provider=openai&model=gpt-test");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { source: String(res.body.source), cost: res.body.entries[0]?.input_cost_per_token as number | undefined };
}

describe("pricing sync on a cluster", { skip: skip ?? false }, () => {
  let server: PricingServer;
  let place: ClusterPlace;
  let first: ClusterNode[] = [];
  let joined: ClusterNode[] = [];

  before(async () => {
    server = await startPricingServer({ kind: "json", body: sheet(1e-6) });
    // A copy older than a second is due: a joining node would download again were it not for the oldest node.
    place = await newClusterPlace({ pricing: { pricing_url: server.url, sync_interval: "1s" } });
    first = await startNodes(place, 1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    joined = await startNodes(place, 2);
  });

  after(async () => {
    if (place) await stopCluster(place, [...first, ...joined]);
    await server?.close();
  });

  test("nodes that join a live cluster serve the stored datasheet without downloading it", async () => {
    const oldest = first[0];
    assert.ok(oldest);
    assert.deepEqual(await priceOn(oldest), { source: "url", cost: 1e-6 });
    for (const at of joined) assert.deepEqual(await priceOn(at), { source: "stored", cost: 1e-6 });
    assert.equal(server.hits, 1, "only the oldest node downloaded");
  });

  test("a datasheet downloaded on one node reaches the others", async () => {
    const oldest = first[0];
    assert.ok(oldest);
    server.answer({ kind: "json", body: sheet(2e-6) });
    const synced = await api(oldest, "POST", "/api/v1/pricing/sync");
    assert.equal(synced.status, 200, JSON.stringify(synced.body));
    for (const at of joined) {
      await eventually(`the new prices on ${at.url}`, async () => ((await priceOn(at)).cost === 2e-6 ? true : undefined));
    }
    assert.equal(server.hits, 2);
  });
});
