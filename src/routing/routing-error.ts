/**
 * Errors the routing layer raises, typed with the /v1 `error_type` vocabulary and
 * carrying the HTTP status the /v1 handler answers with.
 */
import { GatewayError, type GatewayErrorCode } from "../errors.js";

/** The `error_type` values routing can produce, with their HTTP status and gateway code. */
const ROUTING_ERRORS = {
  /** The model string is empty or malformed. */
  caller_invalid_model: { status: 400, code: "invalid_argument" },
  /** A bare model that no routing layer could place with a provider. */
  caller_provider_required: { status: 400, code: "invalid_argument" },
  /** A provider the gateway has no keys for. */
  caller_provider_not_configured: { status: 400, code: "invalid_argument" },
  /** The model is not allowed for any provider config of the key, or by any key of the provider. */
  caller_model_not_allowed: { status: 400, code: "invalid_argument" },
  /** The credential names no virtual key. */
  caller_unknown_virtual_key: { status: 401, code: "unauthenticated" },
  /** The final provider is outside the key's allowed-provider set (a 400, as docs/governance.md says). */
  policy_provider_not_allowed: { status: 400, code: "permission_denied" },
  /** The key's allowed-provider set is empty, so everything is denied (a 400, as docs/governance.md says). */
  policy_no_providers: { status: 400, code: "permission_denied" },
  /** key_ids leaves no usable key of the provider. */
  policy_keys_blocked: { status: 403, code: "permission_denied" },
  /** The virtual key is switched off. */
  policy_virtual_key_inactive: { status: 403, code: "permission_denied" },
  /** Every eligible provider config is over budget. */
  policy_budget_exceeded: { status: 402, code: "resource_exhausted" },
  /** Every eligible provider config is at its token rate limit. */
  policy_rate_limited: { status: 429, code: "resource_exhausted" },
} as const satisfies Record<string, { status: number; code: GatewayErrorCode }>;

/** An `error_type` value routing can produce. */
export type RoutingErrorType = keyof typeof ROUTING_ERRORS;

/** A routing refusal: `type` is the /v1 error_type, `httpStatus` the status to answer with. */
export class RoutingError extends GatewayError {
  declare readonly type: RoutingErrorType;
  declare readonly httpStatus: number;

  constructor(type: RoutingErrorType, message: string, field?: string) {
    const entry = ROUTING_ERRORS[type];
    super(entry.code, message, { type, httpStatus: entry.status, ...(field === undefined ? {} : { field }) });
    this.name = "RoutingError";
  }
}
