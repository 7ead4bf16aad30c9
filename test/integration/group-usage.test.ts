/**
 * ListGroupUsage: every business unit, customer and team with the current windows of its limits, over
 * REST and Connect; spend and requests charged by a key's traffic show at each level of its chain, and a
 * level without limits lists no windows.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { fileKey, sdk } from "../helpers/inference.js";

let openai: MockUpstream;
let app: TestApp;
const ids: Record<string, string> = {};

async function post(path: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await api(app, "POST", `/api/governance/${path}`, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return Object.values(res.body as Record<string, any>)[0];
}

before(async () => {
  openai = await startMockOpenAi();
  app = await startApp({ inference: inferenceOptionsFromFile({ openai: { keys: [fileKey("oa")], network_config: { base_url: openai.url } } }, []) });
  const unit = await post("business-units", { name: "emea", budget: { max_limit: 100, reset_duration: "1M" } });
  const customer = await post("customers", { name: "acme", business_unit_id: unit.id });
  const team = await post("teams", { name: "search", customer_id: customer.id, budget: { max_limit: 10, reset_duration: "1d" }, rate_limit: { request_max_limit: 100, request_reset_duration: "1h" } });
  const key = await post("virtual-keys", { name: "search-bot", team_id: team.id, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"] }] });
  Object.assign(ids, { unit: unit.id, customer: customer.id, team: team.id });
  for (let i = 0; i < 2; i++) await sdk(app, key.value).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
});

after(async () => {
  await app?.stop();
  await openai?.close();
});

test("each level lists the windows of its limits with what the key's traffic used", async () => {
  const res = await api(app, "GET", "/api/governance/group-usage");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const byId = new Map(res.body.levels.map((l: { id: string }) => [l.id, l]));
  const team: any = byId.get(ids["team"] ?? "");
  assert.equal(team.level, "team");
  assert.equal(team.name, "search");
  assert.ok(team.budget.used > 0 && team.budget.max_limit === 10, JSON.stringify(team));
  assert.equal(team.requests.used, 2);
  const unit: any = byId.get(ids["unit"] ?? "");
  assert.equal(unit.level, "business_unit");
  assert.equal(unit.budget.used, team.budget.used);
  assert.equal(unit.requests, undefined);
  const customer: any = byId.get(ids["customer"] ?? "");
  assert.equal(customer.level, "customer");
  assert.equal(customer.budget, undefined);
});

test("the same levels come over Connect", async () => {
  const { levels } = await clientFor(GovernanceService, app.url, "connect").listGroupUsage({});
  assert.deepEqual(levels.map((l) => l.level).sort(), ["business_unit", "customer", "team"]);
  assert.ok((levels.find((l) => l.level === "team")?.budget?.used ?? 0) > 0);
});
