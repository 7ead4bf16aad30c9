/**
 * Routing-rule conditions in CEL: compiled once when a rule is saved (syntax, unknown variables, a result
 * that cannot be boolean), evaluated per request against variables built only when a rule exists. Other
 * conditions over the request (a guardrail's `when`) compile the same way over their own variable set.
 */
import { CelScalar, celEnv, isCelError, mapType, parse, plan, type CelEnv, type CelResult, type CelType } from "@bufbuild/cel";
import { invalidField } from "../errors.js";
import { compileFastCondition, type CelNode } from "./cel-fast-path.js";
import { guardOf, type RuleGuard } from "./cel-guard.js";

/** The variables a routing-rule condition may read, with their CEL types. */
export const RULE_VARIABLE_TYPES = {
  model: CelScalar.STRING,
  provider: CelScalar.STRING,
  request_type: CelScalar.STRING,
  headers: mapType(CelScalar.STRING, CelScalar.STRING),
  params: mapType(CelScalar.STRING, CelScalar.DYN),
  virtual_key_id: CelScalar.STRING,
  virtual_key_name: CelScalar.STRING,
  team_id: CelScalar.STRING,
  team_name: CelScalar.STRING,
  customer_id: CelScalar.STRING,
  customer_name: CelScalar.STRING,
  budget_used: CelScalar.DOUBLE,
  tokens_used: CelScalar.DOUBLE,
  request: CelScalar.DOUBLE,
  complexity_tier: CelScalar.STRING,
} as const;

/** The values of one request a condition reads; `headers` keys are lowercase. */
export interface RuleVariables {
  model: string;
  provider: string;
  request_type: string;
  headers: ReadonlyMap<string, string>;
  params: ReadonlyMap<string, string | number | boolean>;
  virtual_key_id: string;
  virtual_key_name: string;
  team_id: string;
  team_name: string;
  customer_id: string;
  customer_name: string;
  budget_used: number;
  tokens_used: number;
  request: number;
  /** SIMPLE, MEDIUM or COMPLEX, computed only when a rule in scope reads it; "" otherwise. */
  complexity_tier: string;
}

/** The names a condition may use, for messages and the README. */
export const RULE_VARIABLE_NAMES: readonly string[] = Object.keys(RULE_VARIABLE_TYPES);

/** A compiled condition: true, false, or an evaluation error (a missing header, say). */
export interface Condition<V> {
  (vars: V): boolean | Error;
  /** The variables the expression reads, so costly ones are computed only when some rule needs them. */
  readonly reads: ReadonlySet<string>;
  /** A cheap necessary condition (a model or a header it needs), or null: a request it rules out skips the rule. */
  readonly guard: RuleGuard | null;
}

/** A compiled routing-rule condition. */
export type RuleCondition = Condition<RuleVariables>;

/** Values every variable takes when nothing is known, for the compile-time result check. */
export const EMPTY_RULE_VARIABLES: Readonly<RuleVariables> = {
  model: "",
  provider: "",
  request_type: "",
  headers: new Map(),
  params: new Map(),
  virtual_key_id: "",
  virtual_key_name: "",
  team_id: "",
  team_name: "",
  customer_id: "",
  customer_name: "",
  budget_used: 0,
  tokens_used: 0,
  request: 0,
  complexity_tier: "",
};

/** The variables a kind of condition may read: their CEL types, and the values they take when nothing is known. */
export interface ConditionVariables<V> {
  readonly types: Readonly<Record<string, CelType>>;
  readonly names: readonly string[];
  readonly empty: Readonly<V>;
  readonly env: CelEnv;
}

/** A variable set for conditions whose values have the shape `V`. */
export function conditionVariables<V>(types: Readonly<Record<string, CelType>>, empty: Readonly<V>): ConditionVariables<V> {
  return { types, names: Object.keys(types), empty, env: celEnv({ variables: types }) };
}

const RULE_VARIABLES = conditionVariables<RuleVariables>(RULE_VARIABLE_TYPES, EMPTY_RULE_VARIABLES);

/** Operators whose result is never boolean, so a condition made of one cannot match anything. */
const NON_BOOLEAN_CALLS = new Set(["_+_", "_-_", "_*_", "_/_", "_%_", "-_", "size", "string", "int", "double", "uint"]);

/** A parsed CEL node; the AST is typed by the library but walked structurally here. */
type Node = CelNode;

function lineColumn(source: string, offset: number): string {
  const before = source.slice(0, Math.max(0, offset));
  const line = before.split("\n").length;
  const column = offset - (before.lastIndexOf("\n") + 1) + 1;
  return `line ${line}, column ${column}`;
}

/** Children of a node, with the names a comprehension binds for its loop and result. */
function childrenOf(node: Node): { child: Node; binds: string[] }[] {
  const kind = node.exprKind;
  const v = kind.value as Record<string, unknown> | undefined;
  if (v === undefined) return [];
  const plain = (...nodes: unknown[]): { child: Node; binds: string[] }[] =>
    nodes.filter((n): n is Node => n !== undefined && n !== null).map((child) => ({ child, binds: [] }));
  switch (kind.case) {
    case "selectExpr":
      return plain(v["operand"]);
    case "callExpr":
      return plain(v["target"], ...(v["args"] as unknown[]));
    case "listExpr":
      return plain(...(v["elements"] as unknown[]));
    case "structExpr":
      return (v["entries"] as Record<string, unknown>[]).flatMap((entry) => plain(entry["mapKey"], entry["value"]));
    case "comprehensionExpr": {
      const binds = [v["iterVar"], v["iterVar2"], v["accuVar"]].filter((name): name is string => typeof name === "string" && name !== "");
      return [
        ...plain(v["iterRange"], v["accuInit"]),
        ...[v["loopCondition"], v["loopStep"], v["result"]]
          .filter((n): n is Node => n !== undefined && n !== null)
          .map((child) => ({ child, binds })),
      ];
    }
    default:
      return [];
  }
}

/**
 * Refuses unknown variables and lowercases constant header names, so `headers["X-Tier"]` reads `x-tier`;
 * returns the variables the expression reads.
 */
function checkAndNormalize(root: Node, source: string, positions: Record<string, number>, field: string, variables: ConditionVariables<unknown>): Set<string> {
  const reads = new Set<string>();
  const stack: { node: Node; bound: ReadonlySet<string> }[] = [{ node: root, bound: new Set() }];
  // A well-formed AST is a tree; the bound keeps a malformed one from looping forever.
  for (let steps = 0; stack.length > 0 && steps < 100_000; steps++) {
    const { node, bound } = stack.pop() as { node: Node; bound: ReadonlySet<string> };
    const kind = node.exprKind;
    if (kind.case === "identExpr") {
      const name = (kind.value as { name: string }).name;
      if (!bound.has(name) && !(name in variables.types)) {
        const at = positions[String(node.id)];
        throw invalidField(field, `unknown variable "${name}"${at === undefined ? "" : ` at ${lineColumn(source, at)}`}; use one of: ${variables.names.join(", ")}`);
      }
      if (!bound.has(name)) reads.add(name);
    }
    if (kind.case === "callExpr") lowercaseHeaderName(kind.value as { function: string; args: Node[] });
    for (const { child, binds } of childrenOf(node)) {
      stack.push({ node: child, bound: binds.length === 0 ? bound : new Set([...bound, ...binds]) });
    }
  }
  return reads;
}

function isIdent(node: Node | undefined, name: string): boolean {
  return node?.exprKind.case === "identExpr" && (node.exprKind.value as { name: string }).name === name;
}

function lowercaseHeaderName(call: { function: string; args: Node[] }): void {
  const [a, b] = call.args;
  const constant = call.function === "_[_]" && isIdent(a, "headers") ? b : call.function === "@in" && isIdent(b, "headers") ? a : undefined;
  if (constant?.exprKind.case !== "constExpr") return;
  const kind = (constant.exprKind.value as { constantKind: { case: string | undefined; value: unknown } }).constantKind;
  if (kind.case === "stringValue" && typeof kind.value === "string") kind.value = kind.value.toLowerCase();
}

/** Why the root of a condition can never be boolean, or null when it may be. */
function nonBooleanRoot(root: Node, variables: ConditionVariables<unknown>): string | null {
  const kind = root.exprKind;
  if (kind.case === "constExpr") {
    const constant = (kind.value as { constantKind: { case: string | undefined } }).constantKind.case;
    return constant === "boolValue" ? null : `is a constant ${constant?.replace(/Value$/, "") ?? "value"}`;
  }
  if (kind.case === "listExpr") return "is a list";
  if (kind.case === "structExpr") return "is a map or message";
  if (kind.case === "identExpr") {
    const name = (kind.value as { name: string }).name;
    return name in variables.types ? `is the variable "${name}", which is not boolean` : null;
  }
  if (kind.case === "callExpr") {
    const fn = (kind.value as { function: string }).function;
    return NON_BOOLEAN_CALLS.has(fn) ? `is the result of "${fn.replace(/_/g, " ").trim()}", which is not boolean` : null;
  }
  return null;
}

function asBoolean(result: CelResult): boolean | Error {
  if (isCelError(result)) return result;
  if (typeof result === "boolean") return result;
  return new Error(`the expression returned ${typeof result}, not a boolean`);
}

/**
 * Compiles a condition; an empty expression always matches. Throws a 400 on `field` naming the problem:
 * a syntax error with its line and column, an unknown variable, or a result that is not boolean.
 */
export function compileCondition(expression: string, field: string, options: { fastPath?: boolean } = {}): RuleCondition {
  return compileConditionOver(RULE_VARIABLES, expression, field, options);
}

/** compileCondition over another variable set. */
export function compileConditionOver<V>(variables: ConditionVariables<V>, expression: string, field: string, options: { fastPath?: boolean } = {}): Condition<V> {
  if (expression.trim() === "") return Object.assign(() => true, { reads: new Set<string>(), guard: null });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(expression);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const match = /^<input>:(\d+):(\d+): (.*)$/s.exec(message);
    throw invalidField(field, match ? `syntax error at line ${match[1]}, column ${match[2]}: ${match[3]}` : `syntax error: ${message}`);
  }
  const root = parsed.expr as unknown as Node;
  const positions: Record<string, number> = {};
  for (const [id, offset] of Object.entries(parsed.sourceInfo?.positions ?? {})) positions[id] = offset;
  const reads = checkAndNormalize(root, expression, positions, field, variables);
  const why = nonBooleanRoot(root, variables);
  if (why !== null) throw invalidField(field, `must be a boolean expression, but ${why}`);
  const run = plan(variables.env, parsed);
  // With every variable empty, a result that is neither boolean nor an error proves the type wrong.
  const dry = run(variables.empty as never);
  if (!isCelError(dry) && typeof dry !== "boolean") throw invalidField(field, `must be a boolean expression, but it returns a ${typeof dry === "bigint" ? "int" : typeof dry}`);
  // `fastPath: false` keeps every evaluation on the planner: the reference the fast path is tested against.
  const fast = options.fastPath === false ? null : compileFastCondition(root);
  // Header names are lowercase by now (checkAndNormalize), as the request's are.
  const guard = options.fastPath === false ? null : guardOf(root);
  if (fast === null) return Object.assign((vars: V) => asBoolean(run(vars as never)), { reads, guard });
  const evaluate = (vars: V): boolean | Error => {
    const result = fast(vars as unknown as Readonly<Record<string, unknown>>);
    if (result === true || result === false || result instanceof Error) return result;
    return asBoolean(run(vars as never));
  };
  return Object.assign(evaluate, { reads, guard });
}
