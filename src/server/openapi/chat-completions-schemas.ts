/**
 * JSON Schemas of the OpenAI chat-completions wire format, as far as the gateway reads or writes it:
 * fields it checks, routes on, translates for other upstreams, or counts. Every object stays open, since
 * fields the gateway does not know pass through to OpenAI-compatible upstreams and back.
 */
import { ref, type Schema } from "../rest/openapi.js";
import { ANY_OBJECT, BOOLEAN, INTEGER, arrayOf, constant, openObject, text } from "./json-schema.js";

/** An integer count of tokens. */
export const TOKENS: Schema = { type: "integer", minimum: 0 };

/** The gateway's `fallbacks` extension, shared by both inference APIs. */
export const FALLBACKS: Schema = arrayOf(text(), {
  description:
    "Gateway extension: `<provider>/<model>` to try in order when the first choice fails; not sent upstream. With a virtual key, providers outside the key's set are dropped.",
});

/** `stream` on both inference APIs. */
export const STREAM: Schema = { ...BOOLEAN, default: false, description: "true answers `text/event-stream` instead of one JSON object." };

/** `model` on both inference APIs. */
export const MODEL: Schema = {
  type: "string",
  minLength: 1,
  description: "A model, a key alias, or `<provider>/<model>`. With a virtual key, a bare model is routed to one of the key's providers.",
};

/** `tool_choice` on both inference APIs. */
export const TOOL_CHOICE: Schema = { anyOf: [{ type: "string", enum: ["none", "auto", "required"] }, ANY_OBJECT] };

/** Usage details (cached, reasoning, ... tokens), passed on as the upstream reports them. */
const DETAILS = ANY_OBJECT;

const TOOL_CALL = openObject(
  {
    id: text(),
    type: constant("function"),
    function: openObject({ name: text(), arguments: text("The arguments as JSON text encoding an object.") }, ["name", "arguments"]),
  },
  ["id", "type", "function"],
);

const CONTENT_PART = openObject(
  {
    type: text("`text` or `image_url` (others pass through to OpenAI-compatible upstreams)."),
    text: text(),
    image_url: openObject({ url: text("An http(s) URL or a base64 data URL."), detail: text() }, ["url"]),
  },
  ["type"],
);

const MESSAGE = openObject(
  {
    role: text("`system`, `developer`, `user`, `assistant` or `tool`."),
    content: { anyOf: [text(), arrayOf(ref("ChatContentPart")), { type: "null" }] },
    name: text(),
    tool_calls: arrayOf(ref("ChatToolCall"), { description: "The tools an assistant message calls." }),
    tool_call_id: text("The call a `tool` message answers."),
  },
  ["role"],
);

const TOOL = openObject(
  {
    type: constant("function"),
    function: openObject(
      { name: text(), description: text(), parameters: { ...ANY_OBJECT, description: "The JSON Schema of the arguments." }, strict: BOOLEAN },
      ["name"],
    ),
  },
  ["type", "function"],
);

const REQUEST = openObject(
  {
    model: MODEL,
    messages: arrayOf(ref("ChatMessage"), { minItems: 1 }),
    stream: STREAM,
    stream_options: openObject({ include_usage: { ...BOOLEAN, description: "Adds a last chunk carrying `usage`." } }),
    fallbacks: FALLBACKS,
    tools: arrayOf(ref("ChatTool")),
    tool_choice: TOOL_CHOICE,
    parallel_tool_calls: BOOLEAN,
    max_tokens: { type: "integer", minimum: 1 },
    max_completion_tokens: { type: "integer", minimum: 1 },
    temperature: { type: "number" },
    top_p: { type: "number" },
    stop: { anyOf: [text(), arrayOf(text())] },
    user: text(),
    metadata: { type: "object", additionalProperties: text() },
  },
  ["model", "messages"],
  "Fields not listed pass through unchanged to OpenAI-compatible upstreams. The gateway adds the MCP tools the caller may use after `tools` (agent mode).",
);

const USAGE = openObject({
  prompt_tokens: TOKENS,
  completion_tokens: TOKENS,
  total_tokens: TOKENS,
  prompt_tokens_details: DETAILS,
  completion_tokens_details: DETAILS,
});

const FINISH_REASON: Schema = { type: ["string", "null"], description: "`stop`, `length`, `tool_calls`, `content_filter`, ..." };

/** A chat.completion or one chunk of it: the same envelope around different choices. */
function answer(object: string, required: readonly string[], choice: Schema, usage: Schema, description?: string): Schema {
  return openObject({ id: text(), object: constant(object), created: INTEGER, model: text(), choices: arrayOf(choice), usage }, required, description);
}

const COMPLETION = answer(
  "chat.completion",
  ["id", "object", "created", "model", "choices"],
  openObject({ index: INTEGER, message: ref("ChatMessage"), finish_reason: FINISH_REASON }, ["index", "message"]),
  ref("ChatUsage"),
  "The upstream's answer; when the gateway changed nothing it is the upstream's own bytes.",
);

const TOOL_CALL_DELTA = openObject(
  { index: INTEGER, id: text(), type: constant("function"), function: openObject({ name: text(), arguments: text() }) },
  ["index"],
);

const CHUNK = answer(
  "chat.completion.chunk",
  ["id", "object", "choices"],
  openObject(
    {
      index: INTEGER,
      delta: openObject({ role: text(), content: { type: ["string", "null"] }, tool_calls: arrayOf(TOOL_CALL_DELTA) }),
      finish_reason: FINISH_REASON,
    },
    ["index", "delta"],
  ),
  { anyOf: [ref("ChatUsage"), { type: "null" }] },
);

/** The chat-completions component schemas, by name. */
export const CHAT_SCHEMAS: Readonly<Record<string, Schema>> = {
  ChatCompletionRequest: REQUEST,
  ChatMessage: MESSAGE,
  ChatContentPart: CONTENT_PART,
  ChatToolCall: TOOL_CALL,
  ChatTool: TOOL,
  ChatCompletion: COMPLETION,
  ChatCompletionChunk: CHUNK,
  ChatUsage: USAGE,
};
