/**
 * The mcp_auth_required answer: what a tool call gets instead of running when its caller has no usable
 * per-user credential (header values or an OAuth token). The error carries the
 * payload for the HTTP 401 of POST /v1/mcp/tool/execute and, as `toolResult`, the JSON the agent loop
 * hands to the model verbatim (the same body as that 401).
 */
import { GatewayError } from "../../errors.js";

/** A per_user_headers client: the caller submits header values at submit_url. */
export interface HeadersAuthRequiredPayload {
  kind: "headers";
  submit_url: string;
  message: string;
  mcp_client_id: string;
  mcp_client_name: string;
  required_header_keys: string[];
  /** ISO 8601. */
  expires_at: string;
}

/** The `mcp_auth_required` object of the 401 body for a per_user_oauth client. */
export interface OauthAuthRequiredPayload {
  kind: "oauth";
  mcp_client_id: string;
  mcp_client_name: string;
  message: string;
  /** The authorization server's consent URL for this caller's flow. */
  authorize_url: string;
  /** The flow id. */
  session_id: string;
  /** The flow page (with its Connect button). */
  submit_url: string;
  /** ISO 8601. */
  expires_at: string;
}

/** A token_exchange client: the caller must call with its own IdP token, or the exchange failed. */
export interface ExchangeAuthRequiredPayload {
  kind: "exchange";
  message: string;
  mcp_client_id: string;
  mcp_client_name: string;
  /** True when the caller has an identity but sent no IdP token to exchange. */
  subject_token_missing: boolean;
  /** Why the identity provider refused the exchange, when it did. */
  exchange_error?: string;
}

/** The `mcp_auth_required` object of the 401 body. */
export type AuthRequiredPayload = HeadersAuthRequiredPayload | OauthAuthRequiredPayload | ExchangeAuthRequiredPayload;

/** The whole 401 body. */
export interface AuthRequiredBody {
  error: { type: "mcp_auth_required"; message: string };
  mcp_auth_required: AuthRequiredPayload;
}

/** Thrown by McpRuntime.execute() when the caller must submit header values or give OAuth consent first. */
export class McpAuthRequiredError extends GatewayError {
  readonly payload: AuthRequiredPayload;
  /** The 401 body as JSON text: the agent loop's tool result. */
  readonly toolResult: string;

  constructor(payload: AuthRequiredPayload) {
    super("unauthenticated", payload.message, { type: "mcp_auth_required", httpStatus: 401 });
    this.name = "McpAuthRequiredError";
    this.payload = payload;
    this.toolResult = JSON.stringify(this.body);
  }

  /** `{"error": {...}, "mcp_auth_required": {...}}`. */
  get body(): AuthRequiredBody {
    return { error: { type: "mcp_auth_required", message: this.payload.message }, mcp_auth_required: this.payload };
  }
}
