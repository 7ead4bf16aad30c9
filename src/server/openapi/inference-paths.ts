/**
 * The OpenAPI operations of the hand-written inference endpoints, POST /v1/chat/completions, POST
 * /v1/responses, POST /v1/embeddings, POST /anthropic/v1/messages and POST /anthropic/v1/messages/count_tokens:
 * request and answer schemas, the SSE answer of `stream: true`, the error envelope of each API and the
 * statuses governance and body checks give.
 */
import { errorResponse, ref, type Schema } from "../rest/openapi.js";
import { CHAT_SCHEMAS } from "./chat-completions-schemas.js";
import { EMBEDDINGS_SCHEMAS } from "./embeddings-schemas.js";
import { ANTHROPIC_ERROR_SCHEMA, MESSAGES_SCHEMAS } from "./messages-schemas.js";
import { RESPONSES_SCHEMAS } from "./responses-schemas.js";
import { constant, INTEGER, openObject, text } from "./json-schema.js";
import { CALLER, IDENTIFIED_CALLER } from "./security-schemes.js";

/** The name of the OpenAI error envelope among the component schemas. */
export const OPENAI_ERROR_SCHEMA = "OpenAIError";

const OPENAI_ERROR: Schema = {
  type: "object",
  required: ["error"],
  description:
    "The OpenAI error envelope. `type` is the gateway's error type, prefixed `caller_`, `policy_`, `provider_` or `gateway_`; `param` names the offending field or header; `code` is the gateway's error code.",
  properties: {
    error: {
      type: "object",
      required: ["message", "type"],
      properties: {
        message: { type: "string" },
        type: { type: "string" },
        param: { type: ["string", "null"] },
        code: { type: ["string", "null"] },
      },
      additionalProperties: true,
    },
  },
  additionalProperties: true,
};

const INCLUDE_HEADERS: Schema[] = [
  {
    name: "x-gw-mcp-include-clients",
    in: "header",
    required: false,
    schema: { type: "string" },
    description: "Comma-separated MCP client names whose tools are injected; `*` all, blank none.",
  },
  {
    name: "x-gw-mcp-include-tools",
    in: "header",
    required: false,
    schema: { type: "string" },
    description: "Comma-separated `<client>-<tool>` names to inject; `*` all, blank none.",
  },
];

/** Statuses both endpoints give before or instead of an upstream answer. */
const ERRORS: Readonly<Record<number, string>> = {
  400: "A missing or malformed field (caller_invalid_request), a bare model no provider serves (caller_provider_required), a model or provider the virtual key does not allow (caller_model_not_allowed, policy_provider_not_allowed, policy_no_providers), `stream` in agent mode (caller_agent_mode_streaming_unsupported), or a bad include header. A bad x-gw-dim-* header is answered in the /api envelope.",
  401: "An unknown virtual key, or none while client.enforce_governance is on.",
  402: "Every eligible provider of the virtual key is over budget (policy_budget_exceeded).",
  403: "The virtual key is inactive, or every key of its providers is blocked (policy_keys_blocked).",
  413: "The body is larger than client.max_request_body_bytes.",
  415: "The body is not UTF-8 JSON (content-type application/json).",
  429: "Every eligible provider of the virtual key is at its token rate limit (policy_rate_limited).",
};

/** The same statuses on the /anthropic endpoints, with the Anthropic error type each carries. */
const ANTHROPIC_ERRORS: Readonly<Record<number, string>> = {
  400: "invalid_request_error: a missing or malformed field (max_tokens, messages, roles, content block types, a tool_result answering no tool_use), a model or provider the virtual key does not allow, `stream` in agent mode, or a bad include header.",
  401: "authentication_error: an unknown virtual key, or none while client.enforce_governance is on.",
  402: "permission_error: every eligible provider of the virtual key is over budget.",
  403: "permission_error: the virtual key is inactive, or every key of its providers is blocked.",
  413: "invalid_request_error: the body is larger than client.max_request_body_bytes.",
  415: "invalid_request_error: the body is not UTF-8 JSON (content-type application/json).",
  429: "rate_limit_error: every eligible provider of the virtual key is at its token rate limit.",
};

/** How an API reports errors: its envelope and the statuses with their causes. */
interface ErrorFacts {
  schema: string;
  statuses: Readonly<Record<number, string>>;
  upstream: string;
}

const OPENAI_ERRORS: ErrorFacts = {
  schema: OPENAI_ERROR_SCHEMA,
  statuses: ERRORS,
  upstream: "The upstream failed on every attempt: the primary provider's error (provider_*, 502, 503, 504, or the upstream's own 4xx), or a gateway error.",
};

const MESSAGES_ERRORS: ErrorFacts = {
  schema: ANTHROPIC_ERROR_SCHEMA,
  statuses: ANTHROPIC_ERRORS,
  upstream: "The upstream failed on every attempt (api_error, overloaded_error, or the upstream's own 4xx), or a gateway error (api_error).",
};

function errorResponses(facts: ErrorFacts): Schema {
  const responses: Schema = {};
  for (const [status, description] of Object.entries(facts.statuses)) responses[status] = errorResponse(description, facts.schema);
  responses["default"] = errorResponse(facts.upstream, facts.schema);
  return responses;
}

/** An inference operation; `stream` describes its event stream, absent for one that never streams. */
function inferenceOperation(op: {
  operationId: string;
  summary: string;
  description: string;
  request: string;
  answer: string;
  stream?: { event: string; description: string };
  errors?: ErrorFacts;
}): Schema {
  const responses: Schema = {
    "200": {
      description: op.stream ? "The answer: JSON, or with `stream: true` server-sent events." : "The answer, as JSON.",
      content: {
        "application/json": { schema: ref(op.answer) },
        ...(op.stream
          ? {
              "text/event-stream": {
                // OpenAPI 3.1 cannot type the events of a stream, so the schema of one event's data rides along in $defs.
                schema: { type: "string", description: op.stream.description, $defs: { event: ref(op.stream.event) } },
              },
            }
          : {}),
      },
    },
    ...errorResponses(op.errors ?? OPENAI_ERRORS),
  };
  return {
    operationId: op.operationId,
    tags: ["Inference"],
    summary: op.summary,
    description: op.description,
    security: IDENTIFIED_CALLER,
    // Only streaming endpoints run agent mode, whose tools the include headers pick.
    ...(op.stream ? { parameters: INCLUDE_HEADERS } : {}),
    requestBody: { required: true, content: { "application/json": { schema: ref(op.request) } } },
    responses,
  };
}

/** The inference path items, by path. */
export const INFERENCE_PATHS: Readonly<Record<string, Record<string, Schema>>> = {
  "/v1/chat/completions": {
    post: inferenceOperation({
      operationId: "Inference.ChatCompletions",
      summary: "Create a chat completion",
      description:
        "OpenAI chat completions through the gateway's routing, governance and agent mode. `x-gw-dim-<label>` headers give the configured custom metric labels their values.",
      request: "ChatCompletionRequest",
      answer: "ChatCompletion",
      stream: {
        event: "ChatCompletionChunk",
        description:
          "`data:` events holding a ChatCompletionChunk (`$defs/event`), ending in `data: [DONE]`. A failure after the first event is one more `data:` event holding the OpenAI error envelope.",
      },
    }),
  },
  "/v1/responses": {
    post: inferenceOperation({
      operationId: "Inference.Responses",
      summary: "Create a model response",
      description:
        "The OpenAI Responses API through the gateway's routing, governance and agent mode. `x-gw-dim-<label>` headers give the configured custom metric labels their values.",
      request: "ResponsesRequest",
      answer: "Response",
      stream: {
        event: "ResponseStreamEvent",
        description:
          "`event: <type>` and a `data:` line holding a ResponseStreamEvent (`$defs/event`) per event, with no `[DONE]`. A failure after the first event is an `error` event carrying `code`, `message`, `param` and the envelope's `error` object.",
      },
    }),
  },
  "/v1/embeddings": {
    post: inferenceOperation({
      operationId: "Inference.Embeddings",
      summary: "Create embeddings",
      description:
        "OpenAI embeddings through the gateway's routing and governance: passed through to OpenAI-compatible providers, translated for bedrock, vertex and gemini. `x-gw-dim-<label>` headers give the configured custom metric labels their values.",
      request: "EmbeddingsRequest",
      answer: "EmbeddingsList",
    }),
  },
  "/anthropic/v1/messages": {
    post: inferenceOperation({
      operationId: "Inference.Messages",
      summary: "Create a message (Anthropic Messages API)",
      description:
        "The Anthropic Messages API for coding agents, through the same routing, governance, fallbacks, budgets and agent mode as /v1: forwarded as is to Anthropic providers, translated to chat completions and back for the others. `anthropic-version` and `anthropic-beta` reach an Anthropic upstream when client.allowed_headers lets them through.",
      request: "MessagesRequest",
      answer: "Message",
      stream: {
        event: "MessageStreamEvent",
        description:
          "`event: <type>` and a `data:` line holding a MessageStreamEvent (`$defs/event`) per event: message_start, ping, content_block_start / content_block_delta / content_block_stop per block, message_delta, message_stop. A failure after the first event is an `error` event holding Anthropic's error envelope.",
      },
      errors: MESSAGES_ERRORS,
    }),
  },
  "/anthropic/v1/messages/count_tokens": {
    post: {
      operationId: "Inference.CountTokens",
      tags: ["Inference"],
      summary: "Count the input tokens of a message",
      description:
        "Routed like a message: an Anthropic provider counts with its own count_tokens endpoint; for other providers the gateway estimates (characters of the text, tool inputs and results and the tools' JSON divided by 4 and rounded up, plus 1,600 per image and 3 per message). No budget is charged.",
      security: IDENTIFIED_CALLER,
      requestBody: { required: true, content: { "application/json": { schema: ref("CountTokensRequest") } } },
      responses: {
        "200": { description: "The count.", content: { "application/json": { schema: ref("CountTokensResponse") } } },
        ...errorResponses(MESSAGES_ERRORS),
      },
    },
  },
  "/anthropic/v1/models": {
    get: {
      operationId: "Inference.ListAnthropicModels",
      tags: ["Inference"],
      summary: "List the models the caller may use (Anthropic Models API)",
      description:
        "The models the caller's virtual key may use (without a key: every configured provider's catalog models), without their `<provider>/` prefix, in Anthropic's list shape. Coding agents send `limit=1000`.",
      security: CALLER,
      parameters: [
        { name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 1000, default: 1000 } },
        { name: "after_id", in: "query", required: false, schema: { type: "string" }, description: "The page after this model id." },
        { name: "before_id", in: "query", required: false, schema: { type: "string" }, description: "The page before this model id." },
      ],
      responses: {
        "200": { description: "One page of models.", content: { "application/json": { schema: ref("AnthropicModelList") } } },
        "400": errorResponse("invalid_request_error: a bad limit, an unknown after_id or before_id, or both.", ANTHROPIC_ERROR_SCHEMA),
        "401": errorResponse(ANTHROPIC_ERRORS[401] ?? "", ANTHROPIC_ERROR_SCHEMA),
        "403": errorResponse("permission_error: the virtual key is inactive.", ANTHROPIC_ERROR_SCHEMA),
      },
    },
  },
  "/anthropic/v1/models/{id}": {
    get: {
      operationId: "Inference.GetAnthropicModel",
      tags: ["Inference"],
      summary: "Retrieve a model the caller may use (Anthropic Models API)",
      security: CALLER,
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
      responses: {
        "200": { description: "The model.", content: { "application/json": { schema: ref("AnthropicModel") } } },
        "401": errorResponse(ANTHROPIC_ERRORS[401] ?? "", ANTHROPIC_ERROR_SCHEMA),
        "403": errorResponse("permission_error: the virtual key is inactive.", ANTHROPIC_ERROR_SCHEMA),
        "404": errorResponse("not_found_error: no such model among those the caller may use.", ANTHROPIC_ERROR_SCHEMA),
      },
    },
  },
  "/v1/models/{id}": {
    get: {
      operationId: "Inference.GetModel",
      tags: ["Inference"],
      summary: "Retrieve a model the caller may use",
      description:
        "`id` is `provider/model` (its slash sent as is or percent-encoded) or a bare name. With a virtual key: a model its provider configs allow and a permitted key serves; without one: any configured provider's catalog model.",
      security: CALLER,
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
      responses: {
        "200": { description: "The model.", content: { "application/json": { schema: ref("OpenAIModel") } } },
        "401": errorResponse("An unknown virtual key, or none while client.enforce_governance is on.", OPENAI_ERROR_SCHEMA),
        "403": errorResponse("The virtual key is inactive.", OPENAI_ERROR_SCHEMA),
        "404": errorResponse("No such model, or the caller may not use it (caller_model_not_found).", OPENAI_ERROR_SCHEMA),
      },
    },
  },
};

/** The component schemas the inference paths refer to. */
export const INFERENCE_SCHEMAS: Readonly<Record<string, Schema>> = {
  ...CHAT_SCHEMAS,
  ...RESPONSES_SCHEMAS,
  ...MESSAGES_SCHEMAS,
  OpenAIModel: openObject({ id: text(), object: constant("model"), created: INTEGER, owned_by: text("The provider.") }, ["id", "object", "created", "owned_by"]),
  ...EMBEDDINGS_SCHEMAS,
  [OPENAI_ERROR_SCHEMA]: OPENAI_ERROR,
};
