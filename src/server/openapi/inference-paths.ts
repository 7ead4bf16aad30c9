/**
 * The OpenAPI operations of the hand-written /v1 inference endpoints, POST /v1/chat/completions,
 * POST /v1/responses and POST /v1/embeddings: OpenAI request and answer schemas, the SSE answer of
 * `stream: true`, the OpenAI error envelope and the statuses governance and body checks give.
 */
import { errorResponse, ref, type Schema } from "../rest/openapi.js";
import { CHAT_SCHEMAS } from "./chat-completions-schemas.js";
import { EMBEDDINGS_SCHEMAS } from "./embeddings-schemas.js";
import { RESPONSES_SCHEMAS } from "./responses-schemas.js";
import { IDENTIFIED_CALLER } from "./security-schemes.js";

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

/** An inference operation; `stream` describes its event stream, absent for one that never streams. */
function inferenceOperation(op: {
  operationId: string;
  summary: string;
  description: string;
  request: string;
  answer: string;
  stream?: { event: string; description: string };
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
  };
  for (const [status, description] of Object.entries(ERRORS)) responses[status] = errorResponse(description, OPENAI_ERROR_SCHEMA);
  responses["default"] = errorResponse(
    "The upstream failed on every attempt: the primary provider's error (provider_*, 502, 503, 504, or the upstream's own 4xx), or a gateway error.",
    OPENAI_ERROR_SCHEMA,
  );
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

/** The /v1 inference path items, by path. */
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
};

/** The component schemas the inference paths refer to. */
export const INFERENCE_SCHEMAS: Readonly<Record<string, Schema>> = {
  ...CHAT_SCHEMAS,
  ...RESPONSES_SCHEMAS,
  ...EMBEDDINGS_SCHEMAS,
  [OPENAI_ERROR_SCHEMA]: OPENAI_ERROR,
};
