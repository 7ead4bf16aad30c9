/**
 * The Anthropic error envelope, `{"type": "error", "error": {"type", "message"}}`, for the /anthropic
 * endpoints: the status is the one /v1 answers with, and the Anthropic error type follows from it, so
 * caller_* refusals are invalid_request_error, an unknown key authentication_error, a budget or a blocked
 * provider permission_error, a rate limit rate_limit_error, and provider_* failures api_error (or
 * overloaded_error when the gateway or the upstream is at capacity).
 */
import { httpStatusOf, type GatewayError } from "../../errors.js";
import { GuardrailBlockedError } from "../../guardrails/guardrail-blocked.js";
import type { JsonObject } from "../../providers/types.js";
import { v1Error } from "../v1/chat-completions.js";

/** The Anthropic error type of an HTTP status. */
function anthropicType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 402 || status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status === 503 || status === 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/** The Anthropic envelope of `err` and its status. */
export function anthropicErrorBody(err: GatewayError): { status: number; body: JsonObject } {
  // A guardrail's block keeps Anthropic's envelope with the guardrail named beside the message.
  if (err instanceof GuardrailBlockedError) return { status: httpStatusOf(err), body: { type: "error", error: err.toJson() as JsonObject } };
  const status = httpStatusOf(v1Error(err));
  return { status, body: { type: "error", error: { type: anthropicType(status), message: err.message } } };
}
