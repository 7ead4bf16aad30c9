/**
 * Business units, customers and teams through the real app: CRUD over REST and Connect, bad input named,
 * every level's budget and rate limits enforced on /v1 with the refusal naming the level, windows reset
 * on a fake clock, the usage API, the team and customer metric labels, and team-scoped routing rules.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { errorType, fileKey, refusal, sdk } from "../helpers/inference.js";

const HOUR = 3_600_000;
let openai: MockUpstream;
let anthropic: MockUpstream;
let app: TestApp;
let now = Date.UTC(2026, 0, 5, 12);

const CONFIGS = [
  { provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 },
  { provider: "anthropic", allowed_models: ["claude-haiku-4-5"], key_ids: ["*"], weight: 0 },
];

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  const providers = {
    openai: { keys: [fileKey("oa")], network_config: { base_url: openai.url } },
    anthropic: { keys: [fileKey("an")], network_config: { base_url: anthropic.url } },
  };
  app = await startApp({ inference: { ...inferenceOptionsFromFile(providers, []), clock: () => now } });
});

after(async () => {
  await app?.stop();
  await openai?.close();
  await anthropic?.close();
});

async function post(path: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await api(app, "POST", `/api/governance/${path}`, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return Object.values(res.body as Record<string, any>)[0];
}

/** A business unit > customer > team chain with the given limits, and a key in the team. */
async function chain(limits: { unit?: object; customer?: object; team?: object; key?: object } = {}) {
  const tag = randomUUID().slice(0, 8);
  const unit = await post("business-units", { name: `unit-${tag}`, ...limits.unit });
  const customer = await post("customers", { name: `customer-${tag}`, business_unit_id: unit.id, ...limits.customer });
  const team = await post("teams", { name: `team-${tag}`, customer_id: customer.id, ...limits.team });
  const key = await post("virtual-keys", { name: `key-${tag}`, team_id: team.id, provider_configs: CONFIGS, ...limits.key });
  return { unit, customer, team, key };
}

function chat(value: string) {
  return sdk(app, value).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
}

describe("hierarchy CRUD", () => {
  test("creates, reads, updates and deletes a team over REST", async () => {
    const team = await post("teams", { name: `crud-${randomUUID()}`, budget: { max_limit: 10, reset_duration: "1M" } });
    assert.equal(team.budget.calendar_aligned, false);
    const updated = await api(app, "PUT", `/api/governance/teams/${team.id}`, { rate_limit: { request_max_limit: 5, request_reset_duration: "1m" } });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.team.budget.max_limit, 10);
    assert.equal(updated.body.team.rate_limit.request_max_limit, 5);
    assert.ok((await api(app, "GET", "/api/governance/teams")).body.teams.some((t: { id: string }) => t.id === team.id));
    assert.equal((await api(app, "DELETE", `/api/governance/teams/${team.id}`)).status, 200);
    assert.equal((await api(app, "GET", `/api/governance/teams/${team.id}`)).status, 404);
  });

  test("creates and lists customers over Connect", async () => {
    const client = clientFor(GovernanceService, app.url, "connect");
    const { customer } = await client.createCustomer({ customer: { name: `connect-${randomUUID()}`, budget: { maxLimit: 3, resetDuration: "1d" } } });
    assert.ok(customer);
    const listed = await client.listCustomers({});
    assert.ok(listed.customers.some((c) => c.id === customer.id && c.budget?.maxLimit === 3));
  });

  test("refuses unknown parents, bad limits and a key in a team of another customer, naming the field", async () => {
    const { customer, team } = await chain();
    const other = await post("customers", { name: `other-${randomUUID()}` });
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["teams", { name: "t", customer_id: "cu-nope" }, /customer_id: names no customer/],
      ["customers", { name: "c", business_unit_id: "bu-nope" }, /business_unit_id: names no business unit/],
      ["teams", { name: "t", budget: { max_limit: 0, reset_duration: "1d" } }, /budget\.max_limit: must be a number > 0/],
      ["teams", { name: "t", budget: { max_limit: -5, reset_duration: "1d" } }, /budget\.max_limit: must be a number > 0/],
      ["teams", { name: "t", budget: { max_limit: 5, reset_duration: "2 days" } }, /budget\.reset_duration/],
      ["teams", { name: "t", rate_limit: { request_max_limit: 5 } }, /rate_limit\.request_reset_duration/],
      ["virtual-keys", { name: "k", team_id: "team-nope" }, /team_id: names no team/],
      ["virtual-keys", { name: "k", team_id: team.id, customer_id: other.id }, /team_id: team .* belongs to customer/],
      ["virtual-keys", { name: "k", budget: { max_limit: 0, reset_duration: "1d" } }, /budget\.max_limit/],
    ];
    for (const [path, body, message] of cases) {
      const res = await api(app, "POST", `/api/governance/${path}`, body);
      assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.error.message, message);
    }
    assert.ok(customer.id);
  });

  test("refuses deleting a customer that still has teams", async () => {
    const { customer } = await chain();
    const res = await api(app, "DELETE", `/api/governance/customers/${customer.id}`);
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /still has teams/);
  });
});

describe("limits at every level", () => {
  test("refuses with the team named once the team's request limit is used", async () => {
    const { team, key } = await chain({ team: { rate_limit: { request_max_limit: 2, request_reset_duration: "1h" } } });
    await chat(key.value);
    await chat(key.value);
    const err = await refusal(chat(key.value));
    assert.equal(err.status, 429);
    assert.equal(errorType(err), "policy_rate_limited");
    assert.match(err.message, new RegExp(`team "${team.id}"`));
  });

  test("refuses with the key named first when both the key and its customer are exhausted", async () => {
    const limit = { rate_limit: { request_max_limit: 1, request_reset_duration: "1h" } };
    const { key } = await chain({ key: limit, customer: limit });
    await chat(key.value);
    const err = await refusal(chat(key.value));
    assert.match(err.message, new RegExp(`virtual key "${key.id}"`));
  });

  test("refuses with the business unit named once its budget is spent, with a 402", async () => {
    const { unit, key } = await chain({ unit: { budget: { max_limit: 0.000001, reset_duration: "1d" } } });
    await chat(key.value);
    const err = await refusal(chat(key.value));
    assert.equal(err.status, 402);
    assert.equal(errorType(err), "policy_budget_exceeded");
    assert.match(err.message, new RegExp(`business unit "${unit.id}"`));
  });

  test("a team's used request limit survives a restart", async () => {
    const { team, key } = await chain({ team: { rate_limit: { request_max_limit: 2, request_reset_duration: "1h" } } });
    await chat(key.value);
    await chat(key.value);
    await app.stop({ keepData: true });
    app = await startApp(app.restartOptions);
    const err = await refusal(chat(key.value));
    assert.equal(errorType(err), "policy_rate_limited");
    assert.match(err.message, new RegExp(`team "${team.id}"`));
  });

  test("charges every level the same request, and the window resets after its duration", async () => {
    const limit = { rate_limit: { request_max_limit: 1, request_reset_duration: "1h" } };
    const { customer, key } = await chain({ customer: limit });
    await chat(key.value);
    assert.match((await refusal(chat(key.value))).message, new RegExp(`customer "${customer.id}"`));
    now += HOUR;
    assert.ok(await chat(key.value));
  });

  test("a calendar-aligned monthly budget resets on the 1st", async () => {
    now = Date.UTC(2026, 2, 31, 23);
    const { key } = await chain({ key: { budget: { max_limit: 0.000001, reset_duration: "1M", calendar_aligned: true } } });
    await chat(key.value);
    assert.equal((await refusal(chat(key.value))).status, 402);
    now = Date.UTC(2026, 3, 1, 0, 0, 1);
    assert.ok(await chat(key.value));
  });

  test("the usage API shows every level's windows with their reset times", async () => {
    now = Date.UTC(2026, 4, 10, 8);
    const { unit, customer, team, key } = await chain({
      key: { rate_limit: { token_max_limit: 100000, token_reset_duration: "1d" } },
      team: { rate_limit: { request_max_limit: 10, request_reset_duration: "1h" } },
      customer: { budget: { max_limit: 100, reset_duration: "1M", calendar_aligned: true } },
    });
    await chat(key.value);
    const res = await api(app, "GET", `/api/governance/virtual-keys/${key.id}/usage`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const levels = res.body.levels as Record<string, any>[];
    assert.deepEqual(levels.map((l) => [l["level"], l["id"]]), [
      ["virtual_key", key.id],
      ["provider_config", "openai"],
      ["provider_config", "anthropic"],
      ["team", team.id],
      ["customer", customer.id],
      ["business_unit", unit.id],
    ]);
    assert.ok(levels[0]?.["tokens"].used > 0);
    assert.equal(levels[1]?.["budget"], undefined);
    assert.equal(levels[3]?.["requests"].used, 1);
    assert.equal(levels[3]?.["requests"].resets_at, new Date(now + HOUR).toISOString());
    assert.equal(levels[4]?.["budget"].resets_at, new Date(Date.UTC(2026, 5, 1)).toISOString());
    assert.equal(levels[5]?.["budget"], undefined);
  });

  test("the usage API shows a provider config's budget and token windows", async () => {
    now = Date.UTC(2026, 4, 11, 8);
    const configs = [{ ...CONFIGS[0], budgets: [{ max_limit: 5, reset_duration: "1d" }, { max_limit: 0.000001, reset_duration: "1h" }], rate_limit: { token_max_limit: 5000, token_reset_duration: "1h" } }, CONFIGS[1]];
    const { key } = await chain({ key: { provider_configs: configs } });
    await chat(key.value);
    const res = await api(app, "GET", `/api/governance/virtual-keys/${key.id}/usage`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const openai = (res.body.levels as Record<string, any>[]).find((l) => l["level"] === "provider_config" && l["id"] === "openai");
    // Of two budgets, the one closest to running out is shown.
    assert.equal(openai?.["budget"].max_limit, 0.000001);
    assert.equal(openai?.["budget"].reset_duration, "1h");
    assert.ok(openai?.["budget"].used > 0);
    assert.equal(openai?.["tokens"].max_limit, 5000);
    assert.ok(openai?.["tokens"].used > 0);
    assert.equal(openai?.["tokens"].resets_at, new Date(now + HOUR).toISOString());
  });
});

describe("the hierarchy in routing", () => {
  test("fills the team and customer metric labels", async () => {
    const { team, customer, key } = await chain();
    await chat(key.value);
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    const line = metrics.split("\n").find((l) => l.startsWith("gw_upstream_requests_total{") && l.includes(`virtual_key_id="${key.id}"`));
    assert.ok(line);
    for (const [label, value] of [["team_id", team.id], ["team_name", team.name], ["customer_id", customer.id], ["customer_name", customer.name]]) {
      assert.ok(line.includes(`${label}="${value}"`), `${label} is not "${value}" in ${line}`);
    }
  });

  test("applies a team-scoped routing rule to the team's keys only", async () => {
    const { team, key } = await chain();
    const outsider = await post("virtual-keys", { name: `outsider-${randomUUID()}`, provider_configs: CONFIGS });
    const rule = await api(app, "POST", "/api/governance/routing-rules", {
      name: "team-to-anthropic",
      scope: "team",
      scope_id: team.id,
      cel_expression: `team_name == "${team.name}"`,
      targets: [{ provider: "anthropic", model: "claude-haiku-4-5" }],
    });
    assert.equal(rule.status, 200, JSON.stringify(rule.body));
    assert.equal((await chat(key.value)).model, "claude-haiku-4-5");
    assert.equal((await chat(outsider.value)).model, "gpt-4o-mini");
  });
});
