import assert from "node:assert/strict";
import { test } from "node:test";
import { EMPTY_RULE_VARIABLES, compileCondition, type RuleVariables } from "../../src/routing/cel-expression.js";
import { RoutingRuleSet, type RoutingRule } from "../../src/routing/routing-rules.js";
import { seededRandom } from "../../src/routing/weighted-random.js";

function rule(id: string, expression: string, model: string): RoutingRule {
  return {
    id,
    name: id,
    enabled: true,
    priority: 0,
    scope: "global",
    scopeId: "",
    targets: [{ provider: "", model, keyId: "", weight: 1 }],
    fallbacks: [],
    chainRule: false,
    condition: compileCondition(expression, "cel_expression"),
  };
}

const SUBJECT = { virtualKeyId: "", teamId: "", customerId: "" };

function variables(model: string, headers: Record<string, string>): RuleVariables {
  return { ...EMPTY_RULE_VARIABLES, model, headers: new Map(Object.entries(headers)) };
}

function evaluate(set: RoutingRuleSet, model: string, headers: Record<string, string>): { matched: string | null; built: number } {
  let built = 0;
  const match = set.evaluate(
    { provider: "", model, subject: SUBJECT, vars: () => (built++, variables(model, headers)), headerNames: () => new Set(Object.keys(headers)) },
    seededRandom(1),
    () => undefined,
  );
  return { matched: match?.rule.id ?? null, built };
}

test("skips rules whose guard rules the request out without building its variables", () => {
  const set = new RoutingRuleSet();
  set.replaceAll(Array.from({ length: 50 }, (_, i) => rule(`r${i}`, `model == "never-${i}" || ("x-rule-${i}" in headers && request > 200.0)`, "other")));
  assert.deepEqual(evaluate(set, "gpt-4o", { "content-type": "application/json" }), { matched: null, built: 0 });
});

test("still evaluates a guarded rule when its model or header is present", () => {
  const set = new RoutingRuleSet();
  set.replaceAll([rule("by-model", 'model == "gpt-4o"', "a"), rule("by-header", '"x-tier" in headers && headers["x-tier"] == "gold"', "b")]);
  assert.deepEqual(evaluate(set, "gpt-4o", {}), { matched: "by-model", built: 1 });
  assert.deepEqual(evaluate(set, "claude", { "x-tier": "gold" }), { matched: "by-header", built: 1 });
  assert.deepEqual(evaluate(set, "claude", { "x-tier": "silver" }), { matched: null, built: 1 });
});

test("keeps the rules' order when guards by model, by header and none all admit a request", () => {
  const set = new RoutingRuleSet();
  const rules = [rule("by-header", '"x-a" in headers', "a"), rule("open", "request >= 0.0", "b"), rule("by-model", 'model == "m"', "c")];
  set.replaceAll(rules.map((r, priority) => ({ ...r, priority })));
  assert.equal(evaluate(set, "m", { "x-a": "1" }).matched, "by-header");
  set.replaceAll([rules[2], rules[0], rules[1]].map((r, priority) => ({ ...(r as RoutingRule), priority })));
  assert.equal(evaluate(set, "m", { "x-a": "1" }).matched, "by-model");
  assert.equal(evaluate(set, "other", { "x-a": "1" }).matched, "by-header");
  assert.equal(evaluate(set, "other", {}).matched, "open");
});
