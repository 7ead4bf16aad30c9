/**
 * ProviderError: an upstream failure with its HTTP status, one provider_* error type, and whether the
 * router should rotate to another key of the same provider.
 */
import { GatewayError, type GatewayErrorCode } from "../errors.js";

/** The provider_* part of the /v1 error_type vocabulary. */
export type ProviderErrorType =
  | "provider_rate_limited"
  | "provider_auth"
  | "provider_payment"
  | "provider_bad_request"
  | "provider_unavailable"
  | "provider_timeout";

/** A failed upstream call. */
export class ProviderError extends GatewayError {
  /** The upstream's HTTP status; null when no response arrived (network error, timeout). */
  readonly upstreamStatus: number | null;
  readonly errorType: ProviderErrorType;
  /** True when another key of the same provider may succeed (429, 401/403, 402). */
  readonly rotateKey: boolean;
  readonly provider: string;
  /** How long the upstream asked to wait (its retry-after header) in ms; null when it did not say. */
  readonly retryAfterMs: number | null;

  constructor(provider: string, upstreamStatus: number | null, errorType: ProviderErrorType, message: string, cause?: unknown, retryAfterMs: number | null = null) {
    // A caller refused for the upstream's rate limit is told the wait the upstream asked for.
    const retryAfterSeconds = errorType === "provider_rate_limited" && retryAfterMs !== null ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : undefined;
    super(CODES[errorType], message, { type: errorType, httpStatus: HTTP_STATUSES[errorType], cause, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) });
    this.name = "ProviderError";
    this.provider = provider;
    this.upstreamStatus = upstreamStatus;
    this.errorType = errorType;
    this.rotateKey = errorType === "provider_rate_limited" || errorType === "provider_auth" || errorType === "provider_payment";
    this.retryAfterMs = retryAfterMs;
  }
}

const CODES: Record<ProviderErrorType, GatewayErrorCode> = {
  provider_rate_limited: "resource_exhausted",
  provider_auth: "unavailable",
  provider_payment: "unavailable",
  provider_bad_request: "invalid_argument",
  provider_unavailable: "unavailable",
  provider_timeout: "deadline_exceeded",
};

/**
 * The status the gateway answers with when this is the final error: an upstream 400 or 429 is the
 * caller's to see as such; a rejected gateway credential is our fault toward the caller, hence 502.
 */
const HTTP_STATUSES: Record<ProviderErrorType, number> = {
  provider_rate_limited: 429,
  provider_auth: 502,
  provider_payment: 502,
  provider_bad_request: 400,
  provider_unavailable: 502,
  provider_timeout: 504,
};

/** The error type an upstream HTTP status maps to. */
export function errorTypeForStatus(status: number): ProviderErrorType {
  if (status === 429) return "provider_rate_limited";
  if (status === 401 || status === 403) return "provider_auth";
  if (status === 402) return "provider_payment";
  if (status === 408) return "provider_timeout";
  if (status >= 400 && status < 500) return "provider_bad_request";
  return "provider_unavailable";
}

/** Collapses whitespace and caps length so an upstream message fits one log line and one error field. */
export function upstreamText(raw: string, max = 512): string {
  const collapsed = raw.replace(/\s+/g, " ").trim();
  return collapsed.length > max ? `${collapsed.slice(0, max - 1)}…` : collapsed;
}

/**
 * The message inside an upstream error body: OpenAI's {error:{message}}, Anthropic's
 * {type:"error", error:{type, message}}, a bare {message}, or the text itself.
 */
export function upstreamErrorMessage(bodyText: string): string {
  try {
    const parsed: unknown = JSON.parse(bodyText);
    if (parsed && typeof parsed === "object") {
      const obj = parsed as Record<string, unknown>;
      const inner = obj["error"];
      if (inner && typeof inner === "object") {
        const message = (inner as Record<string, unknown>)["message"];
        if (typeof message === "string") return upstreamText(message);
      }
      if (typeof inner === "string") return upstreamText(inner);
      if (typeof obj["message"] === "string") return upstreamText(obj["message"]);
    }
  } catch {
    // Not JSON: the text itself is the message.
  }
  return upstreamText(bodyText) || "no error message in the upstream response";
}

/** The wait a retry-after header asks for, in ms: delay seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now: number = Date.now()): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === "") return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

/** Builds the ProviderError for a non-2xx upstream answer; `retryAfter` is its retry-after header. */
export function fromUpstreamStatus(provider: string, status: number, bodyText: string, retryAfter?: string | string[]): ProviderError {
  return new ProviderError(provider, status, errorTypeForStatus(status), `${provider} answered HTTP ${status}: ${upstreamErrorMessage(bodyText)}`, undefined, retryAfterMs(retryAfter));
}

/**
 * The error of a 2xx answer the gateway must translate but that lacks what every answer of its API has (a
 * message's content, a completion's first choice, a tool call's name): answering the caller an empty or
 * made-up success would hide the upstream's fault, so the attempt fails and a fallback may answer.
 */
export function malformedAnswer(provider: string, status: number, what: string): ProviderError {
  return new ProviderError(provider, status, "provider_unavailable", `${provider} answered HTTP ${status} with ${what}, which the gateway cannot translate`);
}
