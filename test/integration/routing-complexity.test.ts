/**
 * Complexity tiers for routing rules through the real server: semantic tiers from a mock embeddings
 * upstream, llm tiers from a scripted classifier model, session reuse, nothing computed when no rule
 * reads the tier, and the complexity labels and gw_routing_embedding_* metrics.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/load-config.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";
import { fileKey, sdk } from "../helpers/inference.js";
import type { ComplexitySettings } from "../../src/routing/complexity.js";

const EXAMPLES = {
  SIMPLE: ["hello there", "what time is it"],
  MEDIUM: ["summarise this article in five bullet points"],
  COMPLEX: ["design a fault tolerant distributed database with consensus and sharding"],
};

let openai: MockUpstream;
let anthropic: MockUpstream;
let classifier: ScriptedModel;

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  classifier = await startScriptedModel();
});

after(async () => {
  await openai?.close();
  await anthropic?.close();
  await classifier?.close();
});

function providers(): Record<string, unknown> {
  return {
    openai: { keys: [fileKey("oa-1")], network_config: { base_url: openai.url } },
    anthropic: { keys: [fileKey("an-1")], network_config: { base_url: anthropic.url } },
    classifier: { custom_provider_config: { base_provider_type: "openai" }, keys: [fileKey("cl-1", { models: ["tiny"] })], network_config: { base_url: classifier.url } },
  };
}

async function startWith(complexity: ComplexitySettings | undefined): Promise<TestApp> {
  return startApp({ inference: inferenceOptionsFromFile(providers() as never, []), ...(complexity ? { complexity } : {}) });
}

/** A rule sending COMPLEX requests to Anthropic; everything else stays on OpenAI. */
async function complexRule(app: TestApp): Promise<void> {
  const res = await api(app, "POST", "/api/governance/routing-rules", {
    name: `complex-${randomUUID()}`,
    cel_expression: `complexity_tier == "COMPLEX"`,
    targets: [{ provider: "anthropic", model: "claude-sonnet-4-5" }],
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

async function servedBy(app: TestApp, text: string, headers: Record<string, string> = {}): Promise<string> {
  const completion = await sdk(app, null).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: text }] }, { headers });
  return completion.model;
}

async function scrape(app: TestApp): Promise<ReturnType<typeof parseExposition>> {
  return parseExposition(await fetch(`${app.url}/metrics`).then((r) => r.text()));
}

async function eventuallyTotal(app: TestApp, name: string, match: Record<string, string>, atLeast: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const value = total(await scrape(app), name, match);
    if (value >= atLeast) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return total(await scrape(app), name, match);
}

describe("semantic complexity tiers", () => {
  let app: TestApp;
  before(async () => {
    app = await startWith({ mechanism: "semantic", embedding: { provider: "openai", model: "text-embedding-3-small" }, classifier: null, examples: EXAMPLES });
    await complexRule(app);
  });
  after(async () => app?.stop());

  test("embeds the examples once at start as the warm-up", async () => {
    const warmups = await eventuallyTotal(app, "gw_routing_embedding_requests_total", { phase: "warmup", provider: "openai", model: "text-embedding-3-small" }, 1);
    assert.equal(warmups, 1);
    const warmup = openai.requests.find((r) => r.path === "/v1/embeddings" && Array.isArray(r.body?.["input"]));
    assert.deepEqual(warmup?.body?.["input"], [...EXAMPLES.SIMPLE, ...EXAMPLES.MEDIUM, ...EXAMPLES.COMPLEX]);
  });

  test("routes a request nearest a COMPLEX example by the rule", async () => {
    assert.equal(await servedBy(app, EXAMPLES.COMPLEX[0] as string), "claude-sonnet-4-5");
  });

  test("leaves a request nearest a SIMPLE example on the requested provider", async () => {
    assert.equal(await servedBy(app, "what time is it"), "gpt-4o-mini");
  });

  test("labels the request with its tier and mechanism and counts the request embedding", async () => {
    const before = total(await scrape(app), "gw_routing_embedding_requests_total", { phase: "request" });
    await servedBy(app, EXAMPLES.COMPLEX[0] as string);
    const samples = await scrape(app);
    assert.equal(total(samples, "gw_routing_embedding_requests_total", { phase: "request" }), before + 1);
    assert.ok(total(samples, "gw_success_requests_total", { complexity_tier: "COMPLEX", complexity_mechanism: "semantic", routing_rule_name: "" }) === 0);
    assert.ok(total(samples, "gw_success_requests_total", { complexity_tier: "COMPLEX", complexity_mechanism: "semantic" }) >= 1);
    assert.ok(total(samples, "gw_success_requests_total", { complexity_tier: "SIMPLE", complexity_mechanism: "semantic" }) >= 1);
  });

  test("reuses a session's tier without embedding again", async () => {
    const session = { "x-gw-session-id": `s-${randomUUID()}` };
    assert.equal(await servedBy(app, EXAMPLES.COMPLEX[0] as string, session), "claude-sonnet-4-5");
    const embedded = openai.requests.filter((r) => r.path === "/v1/embeddings").length;
    // A simple follow-up in the same session keeps the session's tier.
    assert.equal(await servedBy(app, "hello there", session), "claude-sonnet-4-5");
    assert.equal(openai.requests.filter((r) => r.path === "/v1/embeddings").length, embedded);
    assert.ok(total(await scrape(app), "gw_success_requests_total", { complexity_tier: "COMPLEX", complexity_mechanism: "session" }) >= 1);
  });

  test("goes on without a tier when the embeddings upstream fails", async () => {
    openai.failNext(500, "embeddings down");
    assert.equal(await servedBy(app, EXAMPLES.COMPLEX[0] as string), "gpt-4o-mini");
    assert.ok(total(await scrape(app), "gw_success_requests_total", { complexity_tier: "", complexity_mechanism: "skipped" }) >= 1);
    assert.ok(app.logLines.some((line) => line.includes("no complexity tier for a request")));
  });
});

describe("llm complexity tiers", () => {
  let app: TestApp;
  before(async () => {
    app = await startWith({ mechanism: "llm", embedding: null, classifier: { provider: "classifier", model: "tiny" }, examples: { SIMPLE: [], MEDIUM: [], COMPLEX: [] } });
    await complexRule(app);
  });
  after(async () => app?.stop());

  test("asks the classifier model and routes by its answer", async () => {
    classifier.script({ text: "COMPLEX" }, { text: "SIMPLE" });
    assert.equal(await servedBy(app, "plan a migration of our billing system"), "claude-sonnet-4-5");
    const asked = classifier.bodies().at(-1) as { model: string; messages: { role: string; content: string }[] };
    assert.equal(asked.model, "tiny");
    assert.equal(asked.messages.at(-1)?.content, "plan a migration of our billing system");
    assert.equal(await servedBy(app, "hi"), "gpt-4o-mini");
    assert.ok(total(await scrape(app), "gw_success_requests_total", { complexity_tier: "COMPLEX", complexity_mechanism: "llm" }) >= 1);
  });

  test("treats an answer naming no tier as no tier", async () => {
    classifier.script({ text: "I cannot tell" });
    assert.equal(await servedBy(app, "plan a migration of our billing system"), "gpt-4o-mini");
  });
});

describe("complexity without a rule that reads it", () => {
  test("computes nothing and leaves the labels empty", async () => {
    const app = await startWith({ mechanism: "llm", embedding: null, classifier: { provider: "classifier", model: "tiny" }, examples: { SIMPLE: [], MEDIUM: [], COMPLEX: [] } });
    try {
      const asked = classifier.bodies().length;
      assert.equal(await servedBy(app, "plan a migration"), "gpt-4o-mini");
      assert.equal(classifier.bodies().length, asked);
      assert.ok(total(await scrape(app), "gw_success_requests_total", { complexity_tier: "", complexity_mechanism: "" }) >= 1);
    } finally {
      await app.stop();
    }
  });

  test("answers skipped when a rule reads the tier but routing.complexity is not configured", async () => {
    const app = await startWith(undefined);
    try {
      await complexRule(app);
      assert.equal(await servedBy(app, EXAMPLES.COMPLEX[0] as string), "gpt-4o-mini");
      assert.ok(total(await scrape(app), "gw_success_requests_total", { complexity_tier: "", complexity_mechanism: "skipped" }) >= 1);
    } finally {
      await app.stop();
    }
  });
});

describe("routing.complexity in the config file", () => {
  const parse = (complexity: unknown) => parseConfig({ routing: { complexity } }, {});

  test("reads a semantic configuration", () => {
    const config = parse({ mechanism: "semantic", embedding: { provider: "openai", model: "text-embedding-3-small" }, examples: EXAMPLES });
    assert.equal(config.routing.complexity?.mechanism, "semantic");
    assert.deepEqual(config.routing.complexity?.examples.COMPLEX, EXAMPLES.COMPLEX);
  });

  test("refuses semantic without an embedding model or with a tier that has no example", () => {
    assert.throws(() => parse({ mechanism: "semantic", examples: EXAMPLES }), /routing\.complexity\.embedding: is required/);
    assert.throws(
      () => parse({ mechanism: "semantic", embedding: { provider: "openai", model: "e" }, examples: { SIMPLE: ["a"], MEDIUM: ["b"] } }),
      /routing\.complexity\.examples\.COMPLEX: needs at least one example/,
    );
  });

  test("refuses llm without a classifier, an unknown mechanism and unknown fields", () => {
    assert.throws(() => parse({ mechanism: "llm" }), /routing\.complexity\.classifier: is required/);
    assert.throws(() => parse({ mechanism: "vibes" }), /routing\.complexity\.mechanism: must be semantic or llm/);
    assert.throws(() => parse({ mechanism: "llm", classifier: { provider: "a", model: "b" }, threshold: 2 }), /routing\.complexity/);
  });
});
