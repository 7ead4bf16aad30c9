/**
 * Routing rules through the real app: CRUD over REST and Connect with CEL checked at save, and /v1
 * requests routed by them (scopes and priorities, headers, params, budget percent, pinned providers with
 * fallbacks, disabled rules, chains, conditions that fail at run time), as the mock upstreams see it.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { GovernanceService, RoutingRuleScope } from "../../gen/gw/routing/v1/governance_pb.js";
import { appOptionsFromConfig } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { fileKey, sdk } from "../helpers/inference.js";

let openai: MockUpstream;
let anthropic: MockUpstream;
let app: TestApp;

const OPENAI_MODELS = ["gpt-4o-mini", "gpt-4o"];
const ANTHROPIC = { provider: "anthropic", allowed_models: ["claude-haiku-4-5", "claude-sonnet-4-5"], key_ids: ["*"], weight: 0 };
const BOTH = [{ provider: "openai", allowed_models: OPENAI_MODELS, key_ids: ["*"], weight: 1 }, ANTHROPIC];

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  const providers = {
    openai: { keys: [fileKey("oa-1"), fileKey("oa-2")], network_config: { base_url: openai.url } },
    anthropic: { keys: [fileKey("an-1")], network_config: { base_url: anthropic.url } },
  };
  app = await startApp({ inference: inferenceOptionsFromFile(providers, []) });
});

after(async () => {
  await app?.stop();
  await openai?.close();
  await anthropic?.close();
});

/** A new virtual key allowed both providers (openai preferred); returns its id and value. */
async function newKey(providerConfigs: unknown[] = BOTH): Promise<{ id: string; value: string }> {
  const created = await api(app, "POST", "/api/governance/virtual-keys", { name: `vk-${randomUUID()}`, provider_configs: providerConfigs });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  return { id: created.body.virtual_key.id, value: created.body.virtual_key.value };
}

async function createRule(rule: Record<string, unknown>): Promise<Record<string, any>> {
  const created = await api(app, "POST", "/api/governance/routing-rules", { name: `rule-${randomUUID()}`, ...rule });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  return created.body.routing_rule;
}

/** Sends one chat and returns which upstream served it and with which model. */
async function served(vk: string, model: string, options: { headers?: Record<string, string>; query?: Record<string, string>; body?: Record<string, unknown> } = {}): Promise<string> {
  const before = { openai: openai.requests.length, anthropic: anthropic.requests.length };
  const completion = await sdk(app, vk).chat.completions.create(
    { model, messages: [{ role: "user", content: "hi" }], ...options.body } as never,
    { ...(options.headers ? { headers: options.headers } : {}), ...(options.query ? { query: options.query } : {}) },
  );
  // The upstream that answered is the one whose latest request asked for the model the answer names.
  if (anthropic.requests.length > before.anthropic && anthropic.last().body?.["model"] === completion.model) return `anthropic/${completion.model}`;
  if (openai.requests.length > before.openai && openai.last().body?.["model"] === completion.model) return `openai/${completion.model}`;
  return assert.fail(`no upstream answered with model ${completion.model}`);
}

describe("routing rule CRUD", () => {
  test("creates a rule with its defaults and reads, updates and deletes it over REST", async () => {
    const rule = await createRule({ cel_expression: `model == "gpt-4o"`, targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }] });
    assert.equal(rule.enabled, true);
    assert.equal(rule.priority, 0);
    assert.equal(rule.scope, "global");
    assert.equal(rule.chain_rule, false);
    assert.equal(rule.targets[0].weight, 1);
    const got = await api(app, "GET", `/api/governance/routing-rules/${rule.id}`);
    assert.equal(got.body.routing_rule.cel_expression, `model == "gpt-4o"`);
    const updated = await api(app, "PUT", `/api/governance/routing-rules/${rule.id}`, { enabled: false, priority: 3 });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.routing_rule.enabled, false);
    assert.equal(updated.body.routing_rule.priority, 3);
    assert.equal(updated.body.routing_rule.cel_expression, `model == "gpt-4o"`);
    const listed = await api(app, "GET", "/api/governance/routing-rules");
    assert.ok(listed.body.routing_rules.some((r: { id: string }) => r.id === rule.id));
    assert.equal((await api(app, "DELETE", `/api/governance/routing-rules/${rule.id}`)).status, 200);
    assert.equal((await api(app, "GET", `/api/governance/routing-rules/${rule.id}`)).status, 404);
  });

  test("accepts a PUT of what GET returned and changes nothing", async () => {
    const rule = await createRule({ cel_expression: `headers["x-never"] == "1"`, targets: [{ provider: "openai" }], fallbacks: ["anthropic/"] });
    const got = await api(app, "GET", `/api/governance/routing-rules/${rule.id}`);
    const put = await api(app, "PUT", `/api/governance/routing-rules/${rule.id}`, got.body.routing_rule);
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual({ ...put.body.routing_rule, updated_at: null }, { ...got.body.routing_rule, updated_at: null });
  });

  test("keeps fallbacks in the form they were given", async () => {
    const fallbacks = ["anthropic/", { provider: "openai", model: "gpt-4o", key_id: "oa-1" }, { provider: "openai" }];
    const rule = await createRule({ targets: [{ provider: "openai" }], cel_expression: `headers["x-never"] == "1"`, fallbacks });
    assert.deepEqual(rule.fallbacks, fallbacks);
    const got = await api(app, "GET", `/api/governance/routing-rules/${rule.id}`);
    assert.deepEqual(got.body.routing_rule.fallbacks, fallbacks);
  });

  test("creates and lists rules over Connect", async () => {
    const client = clientFor(GovernanceService, app.url, "connect");
    const { routingRule } = await client.createRoutingRule({
      routingRule: { name: `connect-${randomUUID()}`, celExpression: `request_type == "chat" && headers["x-never"] == "1"`, targets: [{ provider: "openai", model: "gpt-4o" }], priority: 7 },
    });
    assert.ok(routingRule);
    assert.equal(routingRule.scope, RoutingRuleScope.GLOBAL);
    const listed = await client.listRoutingRules({});
    assert.ok(listed.routingRules.some((r) => r.id === routingRule.id && r.priority === 7));
    await client.deleteRoutingRule({ id: routingRule.id });
  });

  test("refuses a syntax error with a 400 naming the line and column", async () => {
    const res = await api(app, "POST", "/api/governance/routing-rules", { name: "bad", cel_expression: `model == "a" &&`, targets: [{ provider: "openai" }] });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /cel_expression: syntax error at line 1, column \d+/);
  });

  test("refuses an expression that is not boolean", async () => {
    for (const expression of ["1 + 2", "model", `"text"`]) {
      const res = await api(app, "POST", "/api/governance/routing-rules", { name: "bad", cel_expression: expression, targets: [{ provider: "openai" }] });
      assert.equal(res.status, 400, expression);
      assert.match(res.body.error.message, /cel_expression: must be a boolean expression/);
    }
  });

  test("refuses an unknown variable, naming it", async () => {
    const res = await api(app, "POST", "/api/governance/routing-rules", { name: "bad", cel_expression: `modle == "gpt-4o"`, targets: [{ provider: "openai" }] });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /cel_expression: unknown variable "modle" at line 1, column 1/);
  });

  test("refuses unknown scope ids, a missing scope_id and targets that name nothing", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ scope: "virtual_key", scope_id: "vk-nope", targets: [{ provider: "openai" }] }, /scope_id: names no virtual key/],
      [{ scope: "team", scope_id: "team-nope", targets: [{ provider: "openai" }] }, /scope_id: names no team/],
      [{ scope: "virtual_key", targets: [{ provider: "openai" }] }, /scope_id: is required/],
      [{ targets: [] }, /targets: needs at least one target/],
      [{ targets: [{ weight: 1 }] }, /targets\[0\]: names nothing/],
      [{ targets: [{ provider: "openai", weight: 0 }] }, /targets\[0\]\.weight/],
      [{ targets: [{ provider: "openai" }], fallbacks: ["gpt-4o"] }, /fallbacks\[0\]/],
      [{ targets: [{ provider: "openai" }], fallbacks: [{ model: "gpt-4o" }] }, /fallbacks\[0\]\.provider: is required/],
      [{ targets: [{ provider: "openai" }], fallbacks: [{ provider: "openai", region: "eu" }] }, /fallbacks\[0\]\.region: is not a fallback field/],
      [{ targets: [{ provider: "openai" }], fallbacks: [{ provider: "openai", key_id: 7 }] }, /fallbacks\[0\]\.key_id: must be a string/],
      [{ targets: [{ provider: "openai" }], fallbacks: [42] }, /fallbacks\[0\]: must be/],
    ];
    for (const [rule, message] of cases) {
      const res = await api(app, "POST", "/api/governance/routing-rules", { name: "bad", ...rule });
      assert.equal(res.status, 400, JSON.stringify(rule));
      assert.match(res.body.error.message, message);
    }
  });

  test("deletes a key's rules with the key", async () => {
    const key = await newKey();
    const rule = await createRule({ scope: "virtual_key", scope_id: key.id, targets: [{ provider: "openai" }] });
    assert.equal((await api(app, "DELETE", `/api/governance/virtual-keys/${key.id}`)).status, 200);
    assert.equal((await api(app, "GET", `/api/governance/routing-rules/${rule.id}`)).status, 404);
  });

  test("refuses a second rule with the same name in the same scope", async () => {
    const name = `same-${randomUUID()}`;
    await createRule({ name, targets: [{ provider: "openai" }], enabled: false });
    const res = await api(app, "POST", "/api/governance/routing-rules", { name, targets: [{ provider: "openai" }] });
    assert.equal(res.status, 409);
    assert.match(res.body.error.message, /names are unique within a scope/);
  });
});

describe("routing by rules", () => {
  test("routes by a header, matched case-insensitively, and labels the routing log", async () => {
    const key = await newKey();
    const rule = await createRule({ scope: "virtual_key", scope_id: key.id, cel_expression: `headers["X-Tier"] == "premium"`, targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }] });
    assert.equal(await served(key.value, "gpt-4o-mini", { headers: { "x-tier": "premium" } }), "anthropic/claude-haiku-4-5");
    const log = await api(app, "GET", "/api/governance/routing-log?limit=1");
    assert.equal(log.status, 200, JSON.stringify(log.body));
    assert.equal(log.body.entries[0].routing_rule_id, rule.id);
    assert.deepEqual(log.body.entries[0].engines, ["routing-rule"]);
    assert.equal(await served(key.value, "gpt-4o-mini", { headers: { "x-tier": "basic" } }), "openai/gpt-4o-mini");
  });

  test("routes by a query parameter and by a body field, the body winning", async () => {
    const key = await newKey();
    await createRule({ scope: "virtual_key", scope_id: key.id, cel_expression: `"region" in params && params.region == "eu"`, targets: [{ provider: "anthropic", model: "claude-sonnet-4-5" }] });
    assert.equal(await served(key.value, "gpt-4o-mini", { query: { region: "eu" } }), "anthropic/claude-sonnet-4-5");
    assert.equal(await served(key.value, "gpt-4o-mini", { body: { region: "eu" } }), "anthropic/claude-sonnet-4-5");
    assert.equal(await served(key.value, "gpt-4o-mini", { query: { region: "eu" }, body: { region: "us" } }), "openai/gpt-4o-mini");
  });

  test("evaluates the key's scope before global rules, and lower priority first within a scope", async () => {
    const key = await newKey();
    const marker = randomUUID();
    const when = `headers["x-case"] == "${marker}"`;
    await createRule({ cel_expression: when, priority: 0, targets: [{ provider: "anthropic", model: "claude-sonnet-4-5" }] });
    await createRule({ cel_expression: when, priority: 1, targets: [{ provider: "openai", model: "gpt-4o" }] });
    const other = await newKey();
    assert.equal(await served(other.value, "gpt-4o-mini", { headers: { "x-case": marker } }), "anthropic/claude-sonnet-4-5");
    await createRule({ scope: "virtual_key", scope_id: key.id, cel_expression: when, priority: 9, targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }] });
    await createRule({ scope: "virtual_key", scope_id: key.id, cel_expression: when, priority: 2, targets: [{ provider: "openai", model: "gpt-4o" }] });
    assert.equal(await served(key.value, "gpt-4o-mini", { headers: { "x-case": marker } }), "openai/gpt-4o");
  });

  test("ignores a disabled rule", async () => {
    const key = await newKey();
    await createRule({ scope: "virtual_key", scope_id: key.id, enabled: false, targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }] });
    assert.equal(await served(key.value, "gpt-4o-mini"), "openai/gpt-4o-mini");
  });

  test("pins a provider and falls back to the rule's fallbacks when it fails", async () => {
    const key = await newKey();
    await createRule({ scope: "virtual_key", scope_id: key.id, targets: [{ provider: "openai", model: "gpt-4o" }], fallbacks: ["anthropic/claude-haiku-4-5"] });
    openai.failNext(500, "upstream broke");
    assert.equal(await served(key.value, "claude-sonnet-4-5"), "anthropic/claude-haiku-4-5");
    assert.equal(openai.last().body?.["model"], "gpt-4o");
  });

  test("falls back to the key a fallback object pins", async () => {
    const key = await newKey();
    await createRule({
      scope: "virtual_key",
      scope_id: key.id,
      targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }],
      fallbacks: [{ provider: "openai", model: "gpt-4o", key_id: "oa-2" }],
    });
    for (let i = 0; i < 5; i++) {
      anthropic.failNext(500, "upstream broke");
      assert.equal(await served(key.value, "gpt-4o-mini"), "openai/gpt-4o");
      assert.equal(openai.last().headers["authorization"], "Bearer sk-oa-2");
    }
  });

  test("pins a provider key", async () => {
    const key = await newKey();
    await createRule({ scope: "virtual_key", scope_id: key.id, targets: [{ provider: "openai", key_id: "oa-2" }] });
    for (let i = 0; i < 5; i++) {
      assert.equal(await served(key.value, "gpt-4o-mini"), "openai/gpt-4o-mini");
      assert.equal(openai.last().headers["authorization"], "Bearer sk-oa-2");
    }
  });

  test("chains rules on the rewritten model until none matches", async () => {
    const key = await newKey();
    await createRule({ scope: "virtual_key", scope_id: key.id, priority: 0, chain_rule: true, cel_expression: `model == "gpt-4o-mini"`, targets: [{ model: "gpt-4o" }] });
    await createRule({ scope: "virtual_key", scope_id: key.id, priority: 1, cel_expression: `model == "gpt-4o"`, targets: [{ provider: "anthropic", model: "claude-sonnet-4-5" }] });
    assert.equal(await served(key.value, "gpt-4o-mini"), "anthropic/claude-sonnet-4-5");
  });

  test("stops a chain of rules that would loop", async () => {
    const key = await newKey();
    await createRule({ scope: "virtual_key", scope_id: key.id, priority: 0, chain_rule: true, cel_expression: `model == "gpt-4o-mini"`, targets: [{ model: "gpt-4o" }] });
    await createRule({ scope: "virtual_key", scope_id: key.id, priority: 1, chain_rule: true, cel_expression: `model == "gpt-4o"`, targets: [{ model: "gpt-4o-mini" }] });
    assert.equal(await served(key.value, "gpt-4o-mini"), "openai/gpt-4o-mini");
  });

  test("treats a condition that fails at run time as no match", async () => {
    const key = await newKey();
    await createRule({ scope: "virtual_key", scope_id: key.id, cel_expression: `headers["x-missing"] == "1"`, targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }] });
    assert.equal(await served(key.value, "gpt-4o-mini"), "openai/gpt-4o-mini");
    assert.equal(await served(key.value, "gpt-4o-mini", { headers: { "x-missing": "1" } }), "anthropic/claude-haiku-4-5");
  });

  test("routes away from a provider once the key has used half its budget", async () => {
    const key = await newKey([
      { provider: "openai", allowed_models: OPENAI_MODELS, key_ids: ["*"], weight: 1, budgets: [{ max_limit: 0.000001, reset_duration: "1h" }] },
      ANTHROPIC,
    ]);
    await createRule({ scope: "virtual_key", scope_id: key.id, cel_expression: "budget_used >= 50.0", targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }] });
    assert.equal(await served(key.value, "gpt-4o-mini"), "openai/gpt-4o-mini");
    assert.equal(await served(key.value, "gpt-4o-mini"), "anthropic/claude-haiku-4-5");
  });

  test("fills the routing rule labels of the request metrics", async () => {
    const key = await newKey();
    const rule = await createRule({ scope: "virtual_key", scope_id: key.id, targets: [{ provider: "openai", model: "gpt-4o" }] });
    await served(key.value, "gpt-4o-mini");
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    const line = metrics.split("\n").find((l) => l.startsWith("gw_upstream_requests_total{") && l.includes(`routing_rule_id="${rule.id}"`));
    assert.ok(line, "no upstream request counted with the rule's id");
    assert.match(line, new RegExp(`routing_rule_name="${rule.name}"`));
    assert.match(line, /routing_engine_used="routing-rule"/);
  });
});

describe("routing rules in the config file", () => {
  function fileOptions(rules: unknown[]) {
    return appOptionsFromConfig(
      parseConfig(
        {
          providers: {
            openai: { keys: [fileKey("f-oa")], network_config: { base_url: openai.url } },
            anthropic: { keys: [fileKey("f-an")], network_config: { base_url: anthropic.url } },
          },
          governance: { virtual_keys: [{ id: "vk-file", name: "file", value: "sk-gw-file", provider_configs: BOTH }], routing_rules: rules },
        },
        {},
      ),
    );
  }

  test("seeds rules that name the file's keys, and routes by them", async () => {
    const rule = { id: "rr-file", name: "premium", scope: "virtual_key", scope_id: "vk-file", cel_expression: `headers["x-tier"] == "premium"`, targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }] };
    const seeded = await startApp(fileOptions([rule]));
    try {
      const got = await api(seeded, "GET", "/api/governance/routing-rules/rr-file");
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.equal(got.body.routing_rule.scope, "virtual_key");
      const completion = await sdk(seeded, "sk-gw-file").chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, { headers: { "x-tier": "premium" } });
      assert.equal(completion.model, "claude-haiku-4-5");
    } finally {
      await seeded.stop();
    }
  });

  test("stops boot on invalid CEL, naming the rule's field", () => {
    assert.throws(
      () => fileOptions([{ id: "rr-bad", name: "bad", cel_expression: "model ==", targets: [{ provider: "openai" }] }]),
      /governance\.routing_rules\[0\]\.cel_expression: syntax error at line 1, column/,
    );
  });
});
