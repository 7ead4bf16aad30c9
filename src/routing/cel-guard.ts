/**
 * The cheapest necessary condition of a routing-rule expression: the models and header names of which
 * at least one must be present for the expression to be true. A request whose model is none of them and
 * that sends none of the headers makes the expression false, without an evaluation error, so the rule can
 * be skipped without building the request's variables or running the condition at all.
 *
 * Only sub-expressions that can never fail are used as guards: `model == "<constant>"` (model is always a
 * string) and `"<constant>" in headers`. CEL's `&&` is false when either side is false, whatever error the
 * other holds, so one guarded side guards the whole; `||` is false only when both sides are, so it is
 * guarded only when every side is, by the union of their guards.
 */
import type { CelNode } from "./cel-fast-path.js";

/** When neither the model nor any header named here is present, the expression is false. */
export interface RuleGuard {
  readonly models: ReadonlySet<string>;
  /** Lowercase header names. */
  readonly headers: readonly string[];
}

function identName(node: CelNode | undefined): string | null {
  return node?.exprKind.case === "identExpr" ? (node.exprKind.value as { name: string }).name : null;
}

function stringConstant(node: CelNode | undefined): string | null {
  if (node?.exprKind.case !== "constExpr") return null;
  const kind = (node.exprKind.value as { constantKind: { case: string | undefined; value: unknown } }).constantKind;
  return kind.case === "stringValue" && typeof kind.value === "string" ? kind.value : null;
}

function union(guards: readonly RuleGuard[]): RuleGuard {
  return { models: new Set(guards.flatMap((g) => [...g.models])), headers: [...new Set(guards.flatMap((g) => g.headers))] };
}

/** The expression's guard, or null when no cheap necessary condition is known. Header names must already be lowercase. */
export function guardOf(node: CelNode): RuleGuard | null {
  if (node.exprKind.case !== "callExpr") return null;
  const { function: fn, target, args } = node.exprKind.value as { function: string; target?: CelNode; args: CelNode[] };
  if (target !== undefined && target !== null && target.exprKind.case !== undefined) return null;
  if (fn === "_==_" && args.length === 2) {
    const [a, b] = args;
    const model = identName(a) === "model" ? stringConstant(b) : identName(b) === "model" ? stringConstant(a) : null;
    return model === null ? null : { models: new Set([model]), headers: [] };
  }
  if (fn === "@in" && args.length === 2 && identName(args[1]) === "headers") {
    const name = stringConstant(args[0]);
    return name === null ? null : { models: new Set(), headers: [name] };
  }
  if (fn === "_&&_") {
    // Either side's guard will do; the one with fewer entries is checked fastest.
    const guards = args.map(guardOf).filter((g): g is RuleGuard => g !== null);
    return guards.sort((x, y) => x.models.size + x.headers.length - (y.models.size + y.headers.length))[0] ?? null;
  }
  if (fn === "_||_") {
    const guards = args.map(guardOf);
    return guards.length > 0 && guards.every((g) => g !== null) ? union(guards as RuleGuard[]) : null;
  }
  return null;
}
