/**
 * Reads model-written code before it runs, with a real JavaScript parser: the tool calls it makes
 * (`<client>.<tool>(...)`), whether it reaches tools in ways that cannot be read ahead (a computed member,
 * a client object passed around), and the source the sandbox runs, whose value is the code's last
 * expression or its `result` variable.
 */
import { parse, type CallExpression, type MemberExpression, type Node, type Program, type Property } from "acorn";

/** The file name errors in the sandbox are reported against. */
export const SANDBOX_FILE = "code.js";

/** A parse failure, as text for the model. */
interface ParseError {
  kind: "error";
  message: string;
}

function parseCode(code: string): Program | ParseError {
  try {
    return parse(code, { ecmaVersion: "latest", sourceType: "script", allowAwaitOutsideFunction: true, allowReturnOutsideFunction: true });
  } catch (err) {
    const loc = (err as { loc?: { line?: number } }).loc;
    const message = (err instanceof Error ? err.message : String(err)).replace(/\s*\(\d+:\d+\)$/, "");
    return { kind: "error", message: `SyntaxError: ${message}${loc?.line !== undefined ? ` (line ${loc.line})` : ""}` };
  }
}

/** The source the sandbox evaluates: a promise of the JSON of the code's value. */
export function prepareCode(code: string): { kind: "source"; source: string } | ParseError {
  const program = parseCode(code);
  if ("kind" in program) return program;
  let body = code;
  const last = program.body[program.body.length - 1];
  if (last?.type === "ExpressionStatement") {
    body = `${code.slice(0, last.start)}return (${code.slice(last.expression.start, last.expression.end)});${code.slice(last.end)}`;
  }
  // Starts on the code's first line and adds none before the code's own, so lines in errors are the code's.
  const source = `(async () => { ${body}\n;return typeof result === "undefined" ? undefined : result; })().then((value) => JSON.stringify(value === undefined ? null : value) ?? "null")`;
  return { kind: "source", source };
}

/** A tool the code calls. */
export interface CodeCall {
  client: string;
  tool: string;
}

/** What reading the code found: its tool calls, and whether it also reaches tools in a way not read ahead. */
export interface CodeCalls {
  calls: CodeCall[];
  dynamic: boolean;
}

function isNode(value: unknown): value is Node {
  return value !== null && typeof value === "object" && typeof (value as { type?: unknown }).type === "string";
}

/** The static name of a member's property: `a.b` and `a["b"]`; null when computed from an expression. */
function propertyName(member: MemberExpression): string | null {
  if (!member.computed && member.property.type === "Identifier") return member.property.name;
  if (member.property.type === "Literal" && typeof member.property.value === "string") return member.property.value;
  return null;
}

/**
 * The `<client>.<tool>(...)` calls of the code, for the clients named. A client object used any other way
 * (a computed property, an alias, a method taken without calling it) makes the result `dynamic`. Returns
 * the parse error when the code is not valid JavaScript.
 */
export function calledTools(code: string, clients: ReadonlySet<string>): CodeCalls | ParseError {
  const program = parseCode(code);
  if ("kind" in program) return program;
  const calls: CodeCall[] = [];
  let dynamic = false;
  // Iterative, so deeply nested code cannot exhaust the gateway's stack.
  const stack: Array<{ node: Node; parent: Node | null }> = [{ node: program, parent: null }];
  while (stack.length > 0) {
    const { node, parent } = stack.pop() as { node: Node; parent: Node | null };
    if (node.type === "Identifier" && clients.has((node as Node & { name: string }).name) && !nameOnly(node, parent)) {
      const asObject = parent?.type === "MemberExpression" && (parent as MemberExpression).object === node;
      if (!asObject) dynamic = true;
    }
    if (node.type === "MemberExpression") {
      const member = node as MemberExpression;
      if (member.object.type === "Identifier" && clients.has(member.object.name)) {
        const tool = propertyName(member);
        const called = parent?.type === "CallExpression" && (parent as CallExpression).callee === node;
        if (tool === null || !called) dynamic = true;
        else calls.push({ client: member.object.name, tool });
      }
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === "loc") continue;
      if (Array.isArray(value)) {
        for (const child of value) if (isNode(child)) stack.push({ node: child, parent: node });
      } else if (isNode(value)) stack.push({ node: value, parent: node });
    }
  }
  return { calls, dynamic };
}

/** An identifier that is only a name, not a reference: `x.github`, `{ github: 1 }`. */
function nameOnly(node: Node, parent: Node | null): boolean {
  if (parent?.type === "MemberExpression") return !(parent as MemberExpression).computed && (parent as MemberExpression).property === node;
  if (parent?.type === "Property") return !(parent as Property).computed && !(parent as Property).shorthand && (parent as Property).key === node;
  return false;
}
