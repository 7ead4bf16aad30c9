/**
 * Where the text a guardrail looks at lives in each API's request, answer and streamed event: chat
 * completions, the Responses API, Anthropic's Messages API and embeddings. Every walk visits the texts in
 * one fixed order, so the texts read by one walk can be written back by the next.
 */

type Json = Record<string, unknown>;
/** Sees a text; returns its replacement, or undefined to leave it. */
type Visit = (text: string) => string | undefined;

/** The APIs whose content guardrails read. */
export type ContentApi = "chat" | "responses" | "messages" | "embedding";

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Visits `holder[key]` when it is a string. */
function field(holder: Json, key: string, visit: Visit): void {
  const value = holder[key];
  if (typeof value !== "string") return;
  const next = visit(value);
  if (next !== undefined) holder[key] = next;
}

/** A content that is a string or a list of parts with `text` (chat parts, Responses items, Messages blocks). */
function content(holder: Json, key: string, visit: Visit): void {
  const value = holder[key];
  if (typeof value === "string") return field(holder, key, visit);
  if (!Array.isArray(value)) return;
  for (const part of value) if (isObject(part)) field(part, "text", visit);
}

/** Visits every text of a request body in order. */
export function walkRequest(api: ContentApi, body: Json, visit: Visit): void {
  if (api === "embedding") {
    const input = body["input"];
    if (typeof input === "string") field(body, "input", visit);
    else if (Array.isArray(input)) input.forEach((entry, index) => typeof entry === "string" && field(input as unknown as Json, String(index), visit));
    return;
  }
  if (api === "responses") {
    field(body, "instructions", visit);
    const input = body["input"];
    if (typeof input === "string") return field(body, "input", visit);
    if (Array.isArray(input)) for (const item of input) if (isObject(item)) content(item, "content", visit);
    return;
  }
  if (api === "messages") content(body, "system", visit);
  const messages = body["messages"];
  if (Array.isArray(messages)) for (const message of messages) if (isObject(message)) content(message, "content", visit);
}

/** Visits every text of a complete answer in order. */
export function walkAnswer(api: ContentApi, body: Json, visit: Visit): void {
  if (api === "chat") {
    const choices = body["choices"];
    if (Array.isArray(choices)) for (const choice of choices) if (isObject(choice) && isObject(choice["message"])) content(choice["message"], "content", visit);
  } else if (api === "responses") {
    const output = body["output"];
    if (Array.isArray(output)) for (const item of output) if (isObject(item)) content(item, "content", visit);
  } else if (api === "messages") content(body, "content", visit);
}

/** Visits the text delta of a streamed event, if it carries one. */
export function walkDelta(api: ContentApi, event: Json, visit: Visit): void {
  if (api === "chat") {
    const choices = event["choices"];
    if (Array.isArray(choices)) for (const choice of choices) if (isObject(choice) && isObject(choice["delta"])) field(choice["delta"], "content", visit);
  } else if (api === "responses") {
    if (event["type"] === "response.output_text.delta") field(event, "delta", visit);
  } else if (api === "messages") {
    if (event["type"] === "content_block_delta" && isObject(event["delta"])) field(event["delta"], "text", visit);
  }
}

/** The texts a walk visits. */
export function textsOf(walk: (visit: Visit) => void): string[] {
  const texts: string[] = [];
  walk((text) => {
    texts.push(text);
    return undefined;
  });
  return texts;
}

/** Writes `texts` back in the walk's order. */
export function writeTexts(walk: (visit: Visit) => void, texts: readonly string[]): void {
  let index = 0;
  walk(() => texts[index++]);
}

/** Where a Responses stream event's text belongs: `<output_index>:<content_index>`; "0:0" when it does not say. */
export function textKey(event: Json): string {
  const output = typeof event["output_index"] === "number" ? event["output_index"] : 0;
  const content = typeof event["content_index"] === "number" ? event["content_index"] : 0;
  return `${output}:${content}`;
}

/**
 * Rewrites the whole texts a finishing event repeats (the Responses API's `output_text.done`,
 * `content_part.done`, `output_item.done` and `completed`) with `textAt(key)`, so text a guardrail redacted in
 * the deltas is not sent again whole at the end. True when the event carried any.
 */
export function rewriteFinalTexts(api: ContentApi, event: Json, textAt: (key: string) => string): boolean {
  if (api !== "responses") return false;
  const type = event["type"];
  const output = typeof event["output_index"] === "number" ? event["output_index"] : 0;
  if (type === "response.output_text.done" && typeof event["text"] === "string") {
    event["text"] = textAt(textKey(event));
    return true;
  }
  if (type === "response.content_part.done" && isObject(event["part"]) && typeof event["part"]["text"] === "string") {
    event["part"]["text"] = textAt(textKey(event));
    return true;
  }
  if (type === "response.output_item.done" && isObject(event["item"])) return rewriteItem(event["item"], output, textAt);
  if ((type === "response.completed" || type === "response.incomplete" || type === "response.failed") && isObject(event["response"])) {
    const items = event["response"]["output"];
    let any = false;
    if (Array.isArray(items)) items.forEach((item, index) => isObject(item) && rewriteItem(item, index, textAt) && (any = true));
    return any;
  }
  return false;
}

function rewriteItem(item: Json, output: number, textAt: (key: string) => string): boolean {
  const parts = item["content"];
  if (!Array.isArray(parts)) return false;
  let any = false;
  parts.forEach((part, index) => {
    if (isObject(part) && typeof part["text"] === "string") {
      part["text"] = textAt(`${output}:${index}`);
      any = true;
    }
  });
  return any;
}
