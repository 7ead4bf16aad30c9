/**
 * What the inference engine takes and gives: the validated call a /v1 or /anthropic handler hands over,
 * the answer (JSON or a stream of events), and the service interface the handlers and the agent loop call.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { RequestAbort } from "../cancellation.js";
import { GatewayError } from "../errors.js";
import { headerReader, headerValue } from "../http-headers.js";
import type {
  ChunkStream,
  ChatRequest,
  ClientBody,
  CountTokensRequest,
  EmbeddingsRequest,
  JsonObject,
  MessagesRequest,
  ResponsesRequest,
} from "../providers/types.js";
import type { VirtualKey } from "../routing/types.js";
import type { RequestScope } from "../telemetry/request-scope.js";
import { credentialFromHeaders, type IdpBearers } from "./credential.js";
import type { CacheStatus } from "./response-cache.js";

/** The inference APIs the service runs: chat completions, the Responses API, Anthropic's Messages API, or embeddings. */
export type CallMethod = "chat" | "responses" | "messages" | "embedding";

/** A validated request body with its method; a call without a method is a chat completion. */
export type MethodBody =
  | {
      method?: "chat";
      /** The request JSON; `model` is a non-empty string and `messages` an array. */
      body: ChatRequest;
    }
  | {
      method: "responses";
      /** The request JSON; `model` is a non-empty string and `input` a string or an array. */
      body: ResponsesRequest;
    }
  | {
      method: "messages";
      /** The Anthropic request JSON; `max_tokens` an integer and `messages` checked block by block. */
      body: MessagesRequest;
    }
  | {
      method: "embedding";
      /** The request JSON; `model` is a non-empty string, `input` checked, never streamed. */
      body: EmbeddingsRequest;
    };

/** One validated request as a /v1 handler hands it over. */
export type ChatCall = MethodBody & {
  /** The body as the client sent it, when `body` is that JSON (validated, unchanged); forwarded as is when the upstream would get the same JSON. */
  rawBody?: ClientBody;
  /**
   * The handler writes each stream chunk out as its text and reads no field (CallOptions.textOnlyChunks);
   * anything in between that reads a chunk's fields reads them through chunkFields.
   */
  textChunks?: boolean;
  headers: IncomingHttpHeaders;
  /** The request's path and query (routing rules read its query parameters); none outside an HTTP request. */
  url?: string;
  /** Aborted when the client goes away; aborts the upstream call. */
  signal: RequestAbort | AbortSignal;
  /** What the HTTP layer read from the request (dimension values, origin); none outside an HTTP request. */
  scope?: RequestScope;
  /** The caller's virtual key when the layer before already resolved it from these headers (agent mode). */
  virtualKey?: VirtualKey | null;
};

/**
 * The answer: the complete JSON (a chat.completion or a response object), or the stream of events
 * (chat.completion.chunk objects, or Responses events each with a `type`).
 */
export type ChatOutcome = (
  | {
      kind: "json";
      body: JsonObject;
      /** `body` exactly as the upstream serialised it, when it is forwarded unchanged: sent as is, never re-encoded. */
      raw?: string;
    }
  | { kind: "stream"; chunks: ChunkStream }
) & {
  /** How the response cache served the request; absent when caching was off for it (the `x-gw-cache` header). */
  cache?: CacheStatus;
  /** `<name>=<verdict>,...` of every guardrail that looked (the `x-gw-guardrails` header); absent when none did. */
  guardrails?: string;
};

/** What is known of a request refused before it could run: its body may be unreadable or invalid. */
export interface RefusedCall {
  method: CallMethod;
  /** The body's `model`, whatever its type; labels the refusal when it is a string. */
  model: unknown;
  headers: IncomingHttpHeaders;
  scope?: RequestScope;
}

/** One Anthropic count_tokens request as the handler hands it over. */
export interface CountTokensCall {
  /** The request JSON; `model` is a non-empty string and `messages` checked. */
  body: CountTokensRequest;
  /** The body as the client sent it, forwarded as is when the upstream would get the same JSON. */
  rawBody?: ClientBody;
  headers: IncomingHttpHeaders;
  signal: RequestAbort | AbortSignal;
  /** What the HTTP layer read from the request; its trace gets the route and the upstream count's attempt. */
  scope?: RequestScope;
}

/** The entry point of the /v1 inference handlers. */
export interface ChatService {
  /** Runs one request; throws RoutingError, ProviderError or GatewayError with the status to answer. */
  complete(call: ChatCall): Promise<ChatOutcome>;
  /**
   * Counts a Messages request's input tokens `{input_tokens}` under the same key and routing as a request:
   * the routed provider counts when it can (Anthropic), else the gateway estimates. No budget is charged.
   */
  countTokens(call: CountTokensCall): Promise<JsonObject>;
  /** Counts a request refused before complete() ran it (a malformed body or header); `error.type` is the answer's error_type. */
  refuse(call: RefusedCall, error: GatewayError): void;
}

/** The request's session id: x-gw-session-id, else the MCP session header; "" without either. */
export function sessionIdOf(headers: IncomingHttpHeaders): string {
  return headerValue(headers, "x-gw-session-id") ?? headerValue(headers, "mcp-session-id") ?? "";
}

/** The credential the request carries, from the first header that has one; null when none. */
export function virtualKeyCredential(headers: IncomingHttpHeaders, idp?: IdpBearers): string | null {
  return credentialFromHeaders(headerReader(headers), idp ? (token) => idp.claimsIssuer(token) : undefined);
}

/** Any thrown value as a GatewayError (an unexpected one is our own fault: 500). */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError("internal", "internal error: the gateway log has the details", { type: "gateway_internal", httpStatus: 500, cause: err });
}

