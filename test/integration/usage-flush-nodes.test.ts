/**
 * Two gateways on one PostgreSQL schema flushing their usage counters into the same row at once: each write
 * adds its node's delta to what the row holds under a lock the nodes take turns on, so no node's count is
 * lost however the writes interleave. The flush interval is a few milliseconds, so the two nodes' writes
 * overlap many times during the burst. Skipped, saying why, when no PostgreSQL server answers.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { dropSchema, randomSchemaName } from "../../src/store/index.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { CLUSTER_DATABASE_URL, clusterSkipReason } from "../helpers/cluster.js";
import { fileKey } from "../helpers/inference.js";
import { queryDatabase } from "../helpers/scratch-database.js";

const skip = await clusterSkipReason();
if (skip) console.log(`# usage flush tests ${skip}`);

/** Requests sent through each node. */
const PER_NODE = 40;
/** Short enough that the two nodes' writes overlap again and again while the requests run. */
const FLUSH_MS = 2;

describe("usage counters flushed by two nodes at once", { skip: skip ?? false }, () => {
  let upstream: MockUpstream;
  const schema = randomSchemaName();
  const nodes: TestApp[] = [];

  before(async () => {
    upstream = await startMockOpenAi();
    const providers = { openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: upstream.url } } };
    const virtualKey = {
      id: "vk-flush",
      name: "flush",
      value: "sk-gw-flush",
      provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1, rate_limit: { token_max_limit: 100_000_000, token_reset_duration: "1h" } }],
    };
    const inference = { ...inferenceOptionsFromFile(providers, [virtualKey], [], { business_unit: [], customer: [], team: [] }), usageFlushIntervalMs: FLUSH_MS };
    const shared = { databaseUrl: CLUSTER_DATABASE_URL, databaseSchema: schema, schema, encryptionKey: randomBytes(32).toString("base64"), inference };
    // One after the other: the first migrates the schema.
    for (let i = 0; i < 2; i++) nodes.push(await startApp(shared));
  });

  after(async () => {
    for (const node of nodes) await node.stop({ keepData: true });
    await dropSchema(CLUSTER_DATABASE_URL, schema);
    await upstream?.close();
  });

  test("the stored token count is what both nodes counted", async () => {
    const spend = async (node: TestApp): Promise<number> => {
      const res = await fetch(`${node.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-gw-flush" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "count me" }] }),
      });
      const body = (await res.json()) as { usage?: { total_tokens?: number } };
      assert.equal(res.status, 200, JSON.stringify(body));
      return body.usage?.total_tokens ?? 0;
    };
    const spent = await Promise.all(nodes.flatMap((node) => Array.from({ length: PER_NODE }, () => spend(node))));
    const total = spent.reduce((a, b) => a + b, 0);
    assert.ok(total > 0, "the upstream reported no tokens");
    // Stopping writes what is left; the schema stays for the check.
    for (const node of nodes.splice(0)) await node.stop({ keepData: true });
    const rows = await queryDatabase<{ tokens: { used: number } | null }>(CLUSTER_DATABASE_URL, `select tokens from "${schema}".usage_counter where virtual_key_id = 'vk-flush' and provider = 'openai'`);
    assert.equal(rows[0]?.tokens?.used, total);
  });
});
