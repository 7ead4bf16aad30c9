/**
 * Why a check that calls out (webhook, moderation, llm_judge) gave no answer: one error type with a precise
 * code for each way it fails, and the one place a foreign failure (undici's, a provider adapter's) becomes
 * one. Messages name the service and what went wrong, never what it answered: a service's error body may
 * echo the content it was sent, and these messages are logged.
 */
import { egressDenial } from "../config/egress-policy.js";
import { GatewayError, type GatewayErrorCode } from "../errors.js";
import { ProviderError } from "../providers/provider-error.js";

/** How a check that calls out failed. */
export type CheckFailureType =
  /** No answer within the guardrail's timeout (or the webhook's own). */
  | "guardrail_check_timeout"
  /** The service answered with a status other than 2xx. */
  | "guardrail_check_status"
  /** The answer was not the JSON the check expects. */
  | "guardrail_check_malformed"
  /** No connection, or it broke before the answer was read. */
  | "guardrail_check_unreachable"
  /** The egress policy refuses the service's address. */
  | "guardrail_check_egress_denied"
  /** The check cannot be made here: its provider is not configured, has no key or no suitable endpoint. */
  | "guardrail_check_unavailable";

const CODES: Record<CheckFailureType, GatewayErrorCode> = {
  guardrail_check_timeout: "deadline_exceeded",
  guardrail_check_status: "unavailable",
  guardrail_check_malformed: "unavailable",
  guardrail_check_unreachable: "unavailable",
  guardrail_check_egress_denied: "failed_precondition",
  guardrail_check_unavailable: "failed_precondition",
};

/** A check that calls out gave no usable answer; on_error decides what happens to the content. */
export class GuardrailCheckError extends GatewayError {
  declare readonly type: CheckFailureType;

  constructor(type: CheckFailureType, message: string) {
    super(CODES[type], message, { type });
    this.name = "GuardrailCheckError";
  }
}

/** The failure of a check that ran out of time. */
export function checkTimedOut(service: string, timeoutMs: number): GuardrailCheckError {
  return new GuardrailCheckError("guardrail_check_timeout", `${service} did not answer within ${timeoutMs} ms`);
}

/** The failure of an answer that is not what the check expects; `problem` says what is wrong with it (never its text). */
export function malformedAnswer(service: string, problem: string): GuardrailCheckError {
  return new GuardrailCheckError("guardrail_check_malformed", `${service} answered ${problem}`);
}

/** The code a Node or undici error carries (ECONNREFUSED, UND_ERR_SOCKET), looked for along its causes. */
function errorCode(err: unknown): string | null {
  for (let current = err, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === "string" && code !== "") return code;
  }
  return null;
}

/**
 * The failure of `err`, thrown while calling `service` (e.g. `the webhook at https://hooks.example.com`):
 * an upstream status, a body that is not JSON, a timeout, an egress refusal or a broken connection.
 */
export function checkFailure(err: unknown, service: string): GuardrailCheckError {
  if (err instanceof GuardrailCheckError) return err;
  const denial = egressDenial(err);
  if (denial !== undefined) return new GuardrailCheckError("guardrail_check_egress_denied", `${service} is refused by the egress policy: ${denial.message}`);
  if (err instanceof ProviderError) {
    const status = err.upstreamStatus;
    // upstream-http reports a 2xx whose body is not a JSON object as an unavailable provider with that status.
    if (status !== null && status >= 200 && status < 300) return malformedAnswer(service, `HTTP ${status} with a body that is not a JSON object`);
    if (status !== null) return new GuardrailCheckError("guardrail_check_status", `${service} answered HTTP ${status}`);
    if (err.errorType === "provider_timeout") return new GuardrailCheckError("guardrail_check_timeout", `${service} did not answer in time`);
    const code = errorCode(err.cause);
    return new GuardrailCheckError("guardrail_check_unreachable", `${service} could not be reached${code === null ? "" : ` (${code})`}`);
  }
  // The gateway's own refusals (a provider without a base URL, say) say what to fix and quote no answer.
  if (err instanceof GatewayError) return new GuardrailCheckError("guardrail_check_unavailable", `${service}: ${err.message}`);
  const code = errorCode(err);
  return new GuardrailCheckError("guardrail_check_unreachable", `${service} could not be reached${code === null ? "" : ` (${code})`}`);
}
