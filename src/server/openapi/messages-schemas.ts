/**
 * JSON Schemas of the Anthropic Messages wire format of the /anthropic endpoints, as far as the gateway
 * reads or writes it: the fields it checks or translates, content blocks, usage, the stream's events,
 * count_tokens, the model listing and Anthropic's error envelope. Every object stays open, as on the OpenAI endpoints.
 */
import { ref, type Schema } from "../rest/openapi.js";
import { FALLBACKS, MODEL, STREAM, TOKENS } from "./chat-completions-schemas.js";
import { ANY_OBJECT, BOOLEAN, INTEGER, arrayOf, constant, openObject, text } from "./json-schema.js";

/** The name of Anthropic's error envelope among the component schemas. */
export const ANTHROPIC_ERROR_SCHEMA = "AnthropicError";

const BLOCK = openObject(
  {
    type: text("user: `text`, `image`, `document`, `tool_result`, `search_result`; assistant: `text`, `tool_use`, `thinking`, `redacted_thinking`, `server_tool_use`, `web_search_tool_result`."),
    text: text(),
    source: ANY_OBJECT,
    id: text(),
    name: text(),
    input: ANY_OBJECT,
    tool_use_id: text("A tool_result's: the id of a tool_use block of the latest assistant message before it."),
    content: { anyOf: [text(), arrayOf(ANY_OBJECT)] },
    is_error: BOOLEAN,
    thinking: text(),
  },
  ["type"],
);

const MESSAGE_PARAM = openObject(
  {
    role: { type: "string", enum: ["user", "assistant"] },
    content: { anyOf: [text(), arrayOf(ref("MessageContentBlock"))] },
  },
  ["role", "content"],
);

const TOOL = openObject({ name: text(), description: text(), input_schema: ANY_OBJECT, type: text("Absent or `custom`; server tools reach Anthropic providers only.") }, ["name"]);

/** The fields a Messages and a count_tokens request share. */
const CONVERSATION: Record<string, Schema> = {
  model: MODEL,
  messages: arrayOf(ref("MessageParam"), { minItems: 1 }),
  system: { anyOf: [text(), arrayOf(openObject({ type: constant("text"), text: text() }, ["type", "text"]))] },
  tools: arrayOf(ref("MessagesTool")),
  tool_choice: openObject({ type: { type: "string", enum: ["auto", "any", "tool", "none"] }, name: text(), disable_parallel_tool_use: BOOLEAN }, ["type"]),
};

const REQUEST = openObject(
  {
    ...CONVERSATION,
    max_tokens: { type: "integer", minimum: 1 },
    stream: STREAM,
    fallbacks: FALLBACKS,
    stop_sequences: arrayOf(text()),
    temperature: { type: "number" },
    top_p: { type: "number" },
    top_k: { type: "integer", description: "Sent to Anthropic providers; other providers have no equivalent." },
    metadata: openObject({ user_id: text() }),
  },
  ["model", "max_tokens", "messages"],
  "To an Anthropic provider the request goes as it came (model resolved, `fallbacks` removed); for the others the gateway translates to chat completions. The gateway adds the MCP tools the caller may use after `tools` (agent mode).",
);

const USAGE = openObject({ input_tokens: TOKENS, output_tokens: TOKENS, cache_creation_input_tokens: TOKENS, cache_read_input_tokens: TOKENS });

const MESSAGE = openObject(
  {
    id: text(),
    type: constant("message"),
    role: constant("assistant"),
    model: text(),
    content: arrayOf(ref("MessageContentBlock")),
    stop_reason: { type: ["string", "null"], description: "`end_turn`, `max_tokens`, `stop_sequence`, `tool_use`, `refusal`, ..." },
    stop_sequence: { type: ["string", "null"] },
    usage: ref("MessagesUsage"),
  },
  ["id", "type", "role", "content", "model"],
);

const STREAM_EVENT = openObject(
  {
    type: text("`message_start`, `ping`, `content_block_start`, `content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`, `error`."),
    message: ref("Message"),
    index: INTEGER,
    content_block: ref("MessageContentBlock"),
    delta: openObject({ type: text("`text_delta`, `input_json_delta`, `thinking_delta`, ..."), text: text(), partial_json: text(), thinking: text(), stop_reason: { type: ["string", "null"] } }),
    usage: ref("MessagesUsage"),
    error: openObject({ type: text(), message: text() }),
  },
  ["type"],
  "One `data:` line of the stream; its `event:` line repeats `type`.",
);

const COUNT_REQUEST = openObject(CONVERSATION, ["model", "messages"], "A Messages request without `max_tokens`.");

const COUNT_RESPONSE = openObject({ input_tokens: TOKENS }, ["input_tokens"]);

const ERROR = openObject(
  {
    type: constant("error"),
    error: openObject(
      {
        type: {
          type: "string",
          enum: ["invalid_request_error", "authentication_error", "permission_error", "not_found_error", "rate_limit_error", "api_error", "overloaded_error"],
        },
        message: text(),
      },
      ["type", "message"],
    ),
  },
  ["type", "error"],
  "Anthropic's error envelope; the status is the one /v1 gives the same error.",
);

const MODEL_ENTRY = openObject({ type: constant("model"), id: text("The model name without its provider prefix."), display_name: text(), created_at: text("RFC 3339.") }, ["type", "id", "display_name", "created_at"]);

const MODEL_LIST = openObject(
  { data: arrayOf(ref("AnthropicModel")), has_more: BOOLEAN, first_id: { type: ["string", "null"] }, last_id: { type: ["string", "null"] } },
  ["data", "has_more", "first_id", "last_id"],
);

/** The Messages component schemas, by name. */
export const MESSAGES_SCHEMAS: Readonly<Record<string, Schema>> = {
  MessagesRequest: REQUEST,
  MessageParam: MESSAGE_PARAM,
  MessageContentBlock: BLOCK,
  MessagesTool: TOOL,
  Message: MESSAGE,
  MessagesUsage: USAGE,
  MessageStreamEvent: STREAM_EVENT,
  CountTokensRequest: COUNT_REQUEST,
  CountTokensResponse: COUNT_RESPONSE,
  AnthropicModel: MODEL_ENTRY,
  AnthropicModelList: MODEL_LIST,
  [ANTHROPIC_ERROR_SCHEMA]: ERROR,
};
