import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "@bufbuild/cel";
import { compileCondition, type RuleVariables } from "../../src/routing/cel-expression.js";
import { seededRandom as random } from "../../src/routing/weighted-random.js";
import { compileFastCondition, type CelNode, type FastCondition } from "../../src/routing/cel-fast-path.js";
import type { RuleGuard } from "../../src/routing/cel-guard.js";

const SEED = 20261126;
const STRINGS = ['"gpt-4o"', '"claude"', '"gpt"', '""', '"x-tier"', '"gold"', '"temperature"', '"2"'];
const NUMBERS = ["0", "1", "2", "50", "0.5", "99.9", "100.0", "2u", "-1"];
const STRING_VARS = ["model", "provider", "request_type", "team_name", "virtual_key_id"];
const NUMBER_VARS = ["budget_used", "tokens_used", "request"];
const KEYS = ['"x-tier"', '"x-env"', '"temperature"', '"n"', '"stream"', '"user"'];

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)] as T;
}

/** One operand: a variable, a constant of either kind, or a map lookup that may miss. */
function operand(next: () => number): string {
  const r = next();
  if (r < 0.3) return pick(next, STRING_VARS);
  if (r < 0.5) return pick(next, NUMBER_VARS);
  if (r < 0.65) return pick(next, STRINGS);
  if (r < 0.8) return pick(next, NUMBERS);
  return `${pick(next, ["headers", "params"])}[${pick(next, KEYS)}]`;
}

/** A boolean-ish leaf in the shapes the fast path handles; some are ill-typed on purpose. */
function leaf(next: () => number): string {
  const r = next();
  if (r < 0.45) return `${operand(next)} ${pick(next, ["==", "!=", "<", "<=", ">", ">="])} ${operand(next)}`;
  if (r < 0.6) return `${pick(next, KEYS)} in ${pick(next, ["headers", "params"])}`;
  if (r < 0.7) return `${operand(next)} in [${pick(next, STRINGS)}, ${pick(next, NUMBERS)}]`;
  if (r < 0.85) return `${operand(next)}.${pick(next, ["startsWith", "endsWith", "contains"])}(${pick(next, STRINGS)})`;
  if (r < 0.92) return pick(next, ["true", "false"]);
  return `${pick(next, ["headers", "params"])}[${pick(next, KEYS)}]`;
}

function expression(next: () => number, depth: number): string {
  const r = next();
  if (depth === 0 || r < 0.35) return leaf(next);
  if (r < 0.45) return `!(${expression(next, depth - 1)})`;
  return `(${expression(next, depth - 1)}) ${r < 0.72 ? "&&" : "||"} (${expression(next, depth - 1)})`;
}

function variables(next: () => number): RuleVariables {
  const headers = new Map<string, string>();
  for (const key of ["x-tier", "x-env", "temperature"]) if (next() < 0.5) headers.set(key, pick(next, ["gold", "2", "", "gpt-4o"]));
  const params = new Map<string, string | number | boolean>();
  for (const key of ["temperature", "n", "stream", "user"]) {
    if (next() < 0.6) params.set(key, pick(next, [0.5, 2, 0, true, false, "gold", "2", 100] as const));
  }
  const text = (): string => pick(next, ["gpt-4o", "claude", "", "gpt", "2"]);
  return {
    model: text(),
    provider: text(),
    request_type: pick(next, ["chat", "responses", "embedding"]),
    headers,
    params,
    virtual_key_id: text(),
    virtual_key_name: text(),
    team_id: "",
    team_name: text(),
    customer_id: "",
    customer_name: "",
    budget_used: pick(next, [0, 1, 2, 50, 99.9, 100]),
    tokens_used: pick(next, [0, 0.5, 50]),
    request: pick(next, [0, 2, 50, 100]),
    complexity_tier: pick(next, ["", "SIMPLE", "COMPLEX"]),
  };
}

type Outcome = true | false | "error";

/** What a guard means: a request with neither one of its models nor one of its headers cannot match. */
function guardAdmits(guard: RuleGuard, vars: RuleVariables): boolean {
  return guard.models.has(vars.model) || guard.headers.some((name) => vars.headers.has(name));
}
const outcome = (r: boolean | Error): Outcome => (r instanceof Error ? "error" : r);

test("the fast path agrees with the CEL planner on generated conditions and requests", () => {
  const next = random(SEED);
  let decided = 0;
  let compared = 0;
  for (let i = 0; i < 600; i++) {
    const source = expression(next, 3);
    let reference: ReturnType<typeof compileCondition>;
    try {
      reference = compileCondition(source, "cel_expression", { fastPath: false });
    } catch {
      continue; // statically not boolean: refused at save, never evaluated
    }
    const fast = compileFastCondition(parse(source).expr as unknown as CelNode);
    assert.ok(fast !== null, `seed ${SEED}, case ${i}: the fast path should handle ${source}`);
    const combined = compileCondition(source, "cel_expression");
    for (let j = 0; j < 8; j++) {
      const vars = variables(next);
      const expected = outcome(reference(vars));
      const quick: ReturnType<FastCondition> = (fast as FastCondition)(vars as unknown as Record<string, unknown>);
      compared++;
      if (typeof quick === "boolean" || quick instanceof Error) {
        decided++;
        assert.equal(outcome(quick), expected, `seed ${SEED}, case ${i}.${j}: ${source} with ${JSON.stringify({ ...vars, headers: [...vars.headers], params: [...vars.params] })}`);
      }
      assert.equal(outcome(combined(vars)), expected, `seed ${SEED}, case ${i}.${j}: ${source}`);
    }
  }
  assert.ok(compared > 3000, `only ${compared} evaluations compared`);
  // Most evaluations must be decided without the planner, or the fast path would be untested and useless.
  assert.ok(decided / compared > 0.6, `the fast path decided only ${decided} of ${compared}`);
});

test("uses the planner for shapes outside the fast path", () => {
  for (const source of ['size(model) > 3', 'model.matches("^gpt")', 'headers.exists(h, h == "x")', 'request + 1.0 > 2.0']) {
    assert.equal(compileFastCondition(parse(source).expr as unknown as CelNode), null, source);
  }
  const condition = compileCondition('size(model) > 3 && model.matches("^gpt")', "cel_expression");
  const vars = variables(random(1));
  assert.equal(condition({ ...vars, model: "gpt-4o" }), true);
  assert.equal(condition({ ...vars, model: "claude" }), false);
});

test("a missing header is the planner's evaluation error on the fast path", () => {
  const condition = compileCondition('headers["x-tier"] == "gold"', "cel_expression");
  const result = condition({ ...variables(random(2)), headers: new Map() });
  assert.ok(result instanceof Error);
  assert.match(result.message, /x-tier/);
});

test("a guard that rules a request out always means the planner answers false, not an error", () => {
  const next = random(SEED + 1);
  let guarded = 0;
  let ruledOut = 0;
  for (let i = 0; i < 3000; i++) {
    const source = expression(next, 3);
    let reference: ReturnType<typeof compileCondition>;
    try {
      reference = compileCondition(source, "cel_expression", { fastPath: false });
    } catch {
      continue;
    }
    const guard = compileCondition(source, "cel_expression").guard;
    if (guard === null) continue;
    guarded++;
    for (let j = 0; j < 8; j++) {
      const vars = variables(next);
      if (guardAdmits(guard, vars)) continue;
      ruledOut++;
      assert.equal(outcome(reference(vars)), false, `seed ${SEED + 1}, case ${i}.${j}: ${source} with model ${vars.model} and headers ${[...vars.headers.keys()].join(",")}`);
    }
  }
  // Enough generated cases must have a guard and be ruled out by it, or this test would prove nothing.
  assert.ok(guarded > 150 && ruledOut > 600, `only ${guarded} guarded conditions and ${ruledOut} ruled-out evaluations`);
});

test("guards a condition on its model constants and header names, and not one that can match without them", () => {
  const guard = compileCondition('model == "gpt-4o" || ("X-Tier" in headers && request > 50.0)', "cel_expression").guard;
  assert.deepEqual(guard && { models: [...guard.models], headers: guard.headers }, { models: ["gpt-4o"], headers: ["x-tier"] });
  for (const source of ['model == "gpt-4o" || request > 50.0', '!(model == "gpt-4o")', 'model != "gpt-4o"', 'headers["x-tier"] == "gold"', "true"]) {
    assert.equal(compileCondition(source, "cel_expression").guard, null, source);
  }
});
