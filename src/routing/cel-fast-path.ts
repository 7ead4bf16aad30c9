/**
 * A direct evaluator for the shapes routing-rule conditions are nearly always made of: comparisons of
 * the request's variables with constants, header and parameter lookups, `in`, string prefix/suffix tests
 * and the logical operators. The general CEL planner costs enough per condition that many rules in scope
 * make it most of a request's own cost; these closures cost a small fraction of that.
 *
 * Exactness comes first: a condition uses this path only when every node of it is understood here, and at
 * run time any value whose CEL meaning is not plainly the JavaScript one (ordering of strings, a method on
 * a non-string, a non-boolean result) answers FALLBACK, so that evaluation goes to the full planner. CEL's
 * error semantics are kept: `&&` and `||` absorb an error when the other side decides the result, and a
 * missing map key is the planner's "field not found" error.
 */

/** A parsed CEL node, walked structurally (the same view the compiler checks take). */
export interface CelNode {
  id: bigint;
  exprKind: { case: string | undefined; value?: unknown };
}

/** Answered when this evaluation must be left to the full CEL planner. */
export const FALLBACK: unique symbol = Symbol("cel-fallback");

/** A value that is neither an error nor FALLBACK. */
type Plain = string | number | boolean | ReadonlyMap<string, unknown>;

/** A value during fast evaluation. */
type Value = Plain | Error | typeof FALLBACK;

/** The variables a compiled condition reads; maps for `headers` and `params`, scalars for the rest. */
export type FastVariables = Readonly<Record<string, unknown>>;

type Eval = (vars: FastVariables) => Value;

/**
 * A fast condition: true, false or an evaluation error decide; anything else (FALLBACK, or a value that
 * is not boolean) leaves this evaluation to the planner.
 */
export type FastCondition = (vars: FastVariables) => Value;

type Getter = (vars: FastVariables) => unknown;

/**
 * One reader per variable: a property read with a fixed name stays monomorphic, where `vars[name]` shared
 * by every rule's closure would turn megamorphic and cost more than the comparison itself.
 */
const SCALAR_VARIABLES = new Map<string, Getter>([
  ["model", (v) => v["model"]],
  ["provider", (v) => v["provider"]],
  ["request_type", (v) => v["request_type"]],
  ["virtual_key_id", (v) => v["virtual_key_id"]],
  ["virtual_key_name", (v) => v["virtual_key_name"]],
  ["team_id", (v) => v["team_id"]],
  ["team_name", (v) => v["team_name"]],
  ["customer_id", (v) => v["customer_id"]],
  ["customer_name", (v) => v["customer_name"]],
  ["budget_used", (v) => v["budget_used"]],
  ["tokens_used", (v) => v["tokens_used"]],
  ["request", (v) => v["request"]],
  ["complexity_tier", (v) => v["complexity_tier"]],
]);
const MAP_VARIABLES = new Map<string, Getter>([
  ["headers", (v) => v["headers"]],
  ["params", (v) => v["params"]],
]);

const isError = (v: Value): v is Error => v instanceof Error;
const isMap = (v: Value): v is ReadonlyMap<string, unknown> => v instanceof Map;

/** CEL `==` on the scalar kinds handled here: numbers compare across int and double, other kinds never equal. */
function equals(a: Plain, b: Plain): boolean | typeof FALLBACK {
  return isMap(a) || isMap(b) ? FALLBACK : a === b;
}

/** Evaluates two operands: FALLBACK, then the first error, wins; otherwise `apply` decides. */
function both(left: Eval, right: Eval, apply: (a: Plain, b: Plain) => Value): Eval {
  return (vars) => {
    const a = left(vars);
    const b = right(vars);
    if (a === FALLBACK || b === FALLBACK) return FALLBACK;
    if (isError(a)) return a;
    if (isError(b)) return b;
    return apply(a, b);
  };
}

function constant(node: CelNode): Value | null {
  const kind = (node.exprKind.value as { constantKind: { case: string | undefined; value: unknown } }).constantKind;
  switch (kind.case) {
    case "stringValue":
    case "boolValue":
    case "doubleValue":
      return kind.value as string | boolean | number;
    case "int64Value":
    case "uint64Value": {
      const n = Number(kind.value as bigint);
      return Number.isSafeInteger(n) ? n : null;
    }
    default:
      return null;
  }
}

function lookup(map: Plain, key: Plain): Value {
  if (!isMap(map) || typeof key !== "string") return FALLBACK;
  const value = map.get(key);
  if (value === undefined) return new Error(`field not found: ${key}`);
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? value : FALLBACK;
}

const ORDER: Record<string, (a: number, b: number) => boolean> = {
  "_<_": (a, b) => a < b,
  "_<=_": (a, b) => a <= b,
  "_>_": (a, b) => a > b,
  "_>=_": (a, b) => a >= b,
};

const STRING_METHODS: Record<string, (s: string, arg: string) => boolean> = {
  startsWith: (s, arg) => s.startsWith(arg),
  endsWith: (s, arg) => s.endsWith(arg),
  contains: (s, arg) => s.includes(arg),
};

function logical(op: "&&" | "||", left: Eval, right: Eval): Eval {
  const decisive = op === "||";
  return (vars) => {
    const l = left(vars);
    if (l === decisive) return decisive;
    const r = right(vars);
    if (r === decisive) return decisive;
    if (l === FALLBACK || r === FALLBACK) return FALLBACK;
    if (isError(l)) return l;
    if (isError(r)) return r;
    if (typeof l !== "boolean" || typeof r !== "boolean") return FALLBACK;
    return !decisive;
  };
}

function call(node: CelNode): Eval | null {
  const { function: fn, target, args } = node.exprKind.value as { function: string; target?: CelNode; args: CelNode[] };
  if (target !== undefined) {
    const method = STRING_METHODS[fn];
    const [argNode] = args;
    if (method === undefined || args.length !== 1 || argNode === undefined) return null;
    const self = compile(target);
    const arg = compile(argNode);
    if (self === null || arg === null) return null;
    return both(self, arg, (s, a) => (typeof s === "string" && typeof a === "string" ? method(s, a) : FALLBACK));
  }
  const [first, second] = args;
  if (fn === "!_" && args.length === 1 && first !== undefined) {
    const operand = compile(first);
    if (operand === null) return null;
    return (vars) => {
      const v = operand(vars);
      return typeof v === "boolean" ? !v : isError(v) ? v : FALLBACK;
    };
  }
  if (args.length !== 2 || first === undefined || second === undefined) return null;
  if (fn === "@in" && second.exprKind.case === "listExpr") {
    const needle = compile(first);
    const elements = (second.exprKind.value as { elements: CelNode[] }).elements.map(compile);
    if (needle === null || elements.some((e) => e === null)) return null;
    const list = elements as Eval[];
    return (vars) => {
      const n = needle(vars);
      if (n === FALLBACK) return FALLBACK;
      if (isError(n)) return n;
      for (const element of list) {
        const e = element(vars);
        const result = e === FALLBACK || isError(e) ? e : equals(n, e);
        if (result !== false) return result;
      }
      return false;
    };
  }
  const direct = specialized(fn, first, second);
  if (direct !== null) return direct;
  const left = compile(first);
  const right = compile(second);
  if (left === null || right === null) return null;
  switch (fn) {
    case "_&&_":
      return logical("&&", left, right);
    case "_||_":
      return logical("||", left, right);
    case "_==_":
      return both(left, right, equals);
    case "_!=_":
      return both(left, right, (a, b) => {
        const result = equals(a, b);
        return typeof result === "boolean" ? !result : result;
      });
    case "_[_]":
      return both(left, right, lookup);
    case "@in":
      return both(left, right, (key, map) => (isMap(map) && typeof key === "string" ? map.has(key) : FALLBACK));
    default: {
      const order = ORDER[fn];
      if (order === undefined) return null;
      return both(left, right, (a, b) => (typeof a === "number" && typeof b === "number" ? order(a, b) : FALLBACK));
    }
  }
}

function identName(node: CelNode): string | null {
  return node.exprKind.case === "identExpr" ? (node.exprKind.value as { name: string }).name : null;
}

/**
 * The commonest comparisons, a variable against a constant, as one closure each: the generic path
 * costs a closure call per operand and the checks of `equals`.
 */
function specialized(fn: string, first: CelNode, second: CelNode): Eval | null {
  const firstName = identName(first);
  const secondName = identName(second);
  if ((fn === "_==_" || fn === "_!=_") && (firstName !== null) !== (secondName !== null)) {
    const name = (firstName ?? secondName) as string;
    const value = firstName !== null ? (second.exprKind.case === "constExpr" ? constant(second) : null) : first.exprKind.case === "constExpr" ? constant(first) : null;
    const get = SCALAR_VARIABLES.get(name);
    if (get === undefined || value === null || typeof value === "object" || typeof value === "symbol") return null;
    const negate = fn === "_!=_";
    return (vars) => {
      const v = get(vars);
      if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") return FALLBACK;
      return (v === value) !== negate;
    };
  }
  const getMap = secondName === null ? undefined : MAP_VARIABLES.get(secondName);
  if (fn === "@in" && getMap !== undefined && first.exprKind.case === "constExpr") {
    const key = constant(first);
    if (typeof key !== "string") return null;
    return (vars) => {
      const map = getMap(vars);
      return map instanceof Map ? map.has(key) : FALLBACK;
    };
  }
  const order = ORDER[fn];
  const getScalar = firstName === null ? undefined : SCALAR_VARIABLES.get(firstName);
  if (order !== undefined && getScalar !== undefined && second.exprKind.case === "constExpr") {
    const bound = constant(second);
    if (typeof bound !== "number") return null;
    return (vars) => {
      const v = getScalar(vars);
      return typeof v === "number" ? order(v, bound) : FALLBACK;
    };
  }
  return null;
}

function compile(node: CelNode): Eval | null {
  switch (node.exprKind.case) {
    case "constExpr": {
      const value = constant(node);
      return value === null ? null : () => value;
    }
    case "identExpr": {
      const name = (node.exprKind.value as { name: string }).name;
      const get = SCALAR_VARIABLES.get(name) ?? MAP_VARIABLES.get(name);
      if (get === undefined) return null;
      return (vars) => {
        const value = get(vars);
        return typeof value === "string" || typeof value === "number" || typeof value === "boolean" || value instanceof Map ? value : FALLBACK;
      };
    }
    case "callExpr":
      return call(node);
    default:
      return null;
  }
}

/**
 * Compiles a checked condition to direct closures, or null when some part of it is outside the shapes
 * understood here (the caller then uses the CEL planner for every evaluation).
 */
export function compileFastCondition(root: CelNode): FastCondition | null {
  return compile(root);
}
