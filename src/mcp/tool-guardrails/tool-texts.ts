/**
 * Where the text of a tool stage lives: every string value of a call's arguments (at any depth, never a
 * key); of a result, the text of its text blocks and of its embedded text resources, then every string
 * value of its structuredContent; of a tool's definition, its name, its description and every
 * `description` string of its input schema. Each walk visits the texts in one fixed order, so the texts one
 * walk reads can be written back by the next into a copy. The walks use their own stack: a deeply nested
 * value a caller sent cannot overflow the call stack.
 */

type Json = Record<string, unknown>;
/** Sees a text; returns its replacement, or undefined to leave it. */
export type Visit = (text: string) => string | undefined;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A string's place: the object or array holding it and its key there. */
type Slot = [holder: Json | unknown[], key: string | number];

function read(slot: Slot): unknown {
  const [holder, key] = slot;
  return Array.isArray(holder) ? holder[key as number] : holder[key as string];
}

function write(slot: Slot, value: string): void {
  const [holder, key] = slot;
  if (Array.isArray(holder)) holder[key as number] = value;
  else holder[key as string] = value;
}

/** The slots of a container's entries, in order. */
function entries(container: Json | unknown[]): Slot[] {
  if (Array.isArray(container)) return container.map((_, index): Slot => [container, index]);
  return Object.keys(container).map((key): Slot => [container, key]);
}

/**
 * Visits every string inside `slots` depth first, in document order; `take` says which strings count
 * (every one, or only those under a given key).
 */
function walkSlots(slots: Slot[], visit: Visit, take: (slot: Slot) => boolean): void {
  const stack = slots.reverse();
  for (let slot = stack.pop(); slot !== undefined; slot = stack.pop()) {
    const value = read(slot);
    if (typeof value === "string") {
      if (!take(slot)) continue;
      const next = visit(value);
      if (next !== undefined) write(slot, next);
    } else if (Array.isArray(value) || isObject(value)) {
      stack.push(...entries(value).reverse());
    }
  }
}

const EVERY = (): boolean => true;

/** Visits every string value of a call's arguments. */
export function walkArguments(args: Json, visit: Visit): void {
  walkSlots(entries(args), visit, EVERY);
}

/** Visits the texts of a tool result: text blocks, embedded text resources, then structuredContent's strings. */
export function walkResult(result: unknown, visit: Visit): void {
  if (!isObject(result)) return;
  const content = result["content"];
  if (Array.isArray(content)) {
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block["type"] === "text" && typeof block["text"] === "string") walkSlots([[block, "text"]], visit, EVERY);
      else if (block["type"] === "resource" && isObject(block["resource"]) && typeof block["resource"]["text"] === "string") walkSlots([[block["resource"], "text"]], visit, EVERY);
    }
  }
  const structured = result["structuredContent"];
  if (isObject(structured) || Array.isArray(structured)) walkSlots(entries(structured), visit, EVERY);
}

/** The parts of a tool's definition a tool_definition guardrail reads. */
export interface ToolDefinitionParts {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** Visits a definition's description, then every `description` string of its input schema (the name is read apart: it is never rewritten). */
export function walkDescriptions(tool: { description: string; inputSchema: Json }, visit: Visit): void {
  const next = visit(tool.description);
  if (next !== undefined) tool.description = next;
  walkSlots(entries(tool.inputSchema), visit, ([, key]) => key === "description");
}
