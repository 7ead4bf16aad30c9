/**
 * JSON Schemas of the OpenAI Responses wire format, as far as the gateway reads or writes it: the
 * request fields it checks or translates for chat-only upstreams, the output items the agent loop
 * follows, usage, and the stream's events. Every object stays open, as on chat completions.
 */
import { ref, type Schema } from "../rest/openapi.js";
import { FALLBACKS, MODEL, STREAM, TOKENS, TOOL_CHOICE } from "./chat-completions-schemas.js";
import { ANY_OBJECT, BOOLEAN, INTEGER, arrayOf, constant, openObject, text } from "./json-schema.js";

const INPUT_ITEM = openObject(
  {
    type: text("`message` when absent; `function_call`, `function_call_output`, ..."),
    role: text(),
    content: { anyOf: [text(), arrayOf(ANY_OBJECT)] },
    call_id: text(),
    name: text(),
    arguments: text(),
    output: text(),
  },
  [],
  "A message (`role`, `content`), a `function_call` (`call_id`, `name`, `arguments`) or a `function_call_output` (`call_id`, `output`).",
);

const TOOL = openObject(
  {
    type: text("`function`; other tool types pass through to upstreams that serve the Responses API."),
    name: text(),
    description: text(),
    parameters: ANY_OBJECT,
    strict: BOOLEAN,
  },
  ["type"],
);

const REQUEST = openObject(
  {
    model: MODEL,
    input: { anyOf: [text(), arrayOf(ref("ResponseInputItem"), { minItems: 1 })] },
    instructions: text(),
    stream: STREAM,
    fallbacks: FALLBACKS,
    tools: arrayOf(ref("ResponseTool")),
    tool_choice: TOOL_CHOICE,
    parallel_tool_calls: BOOLEAN,
    max_output_tokens: { type: "integer", minimum: 1 },
    temperature: { type: "number" },
    top_p: { type: "number" },
    user: text(),
  },
  ["model", "input"],
  "Fields not listed pass through unchanged to upstreams that serve the Responses API; for the others the gateway translates to chat completions. The gateway adds the MCP tools the caller may use after `tools` (agent mode).",
);

const OUTPUT_ITEM = openObject(
  {
    type: text("`message`, `function_call`, `reasoning`, ..."),
    id: text(),
    status: text(),
    role: text(),
    content: arrayOf(openObject({ type: text("`output_text`, ..."), text: text() }, ["type"])),
    call_id: text(),
    name: text(),
    arguments: text(),
  },
  ["type"],
);

const USAGE = openObject({
  input_tokens: TOKENS,
  output_tokens: TOKENS,
  total_tokens: TOKENS,
  input_tokens_details: ANY_OBJECT,
  output_tokens_details: ANY_OBJECT,
});

const RESPONSE = openObject(
  {
    id: text(),
    object: constant("response"),
    created_at: INTEGER,
    status: text(),
    model: text(),
    output: arrayOf(ref("ResponseOutputItem")),
    usage: ref("ResponseUsage"),
  },
  ["id", "object", "model", "output"],
);

const STREAM_EVENT = openObject(
  {
    type: text("`response.created`, `response.output_text.delta`, `response.completed`, `error`, ..."),
    sequence_number: INTEGER,
    response: ref("Response"),
    item: ref("ResponseOutputItem"),
    output_index: INTEGER,
    delta: text(),
    code: { type: ["string", "null"] },
    message: text(),
    param: { type: ["string", "null"] },
  },
  ["type"],
  "One `data:` line of the stream; its `event:` line repeats `type`.",
);

/** The Responses component schemas, by name. */
export const RESPONSES_SCHEMAS: Readonly<Record<string, Schema>> = {
  ResponsesRequest: REQUEST,
  ResponseInputItem: INPUT_ITEM,
  ResponseTool: TOOL,
  Response: RESPONSE,
  ResponseOutputItem: OUTPUT_ITEM,
  ResponseUsage: USAGE,
  ResponseStreamEvent: STREAM_EVENT,
};
