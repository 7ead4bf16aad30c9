/**
 * The mcp_auth_required answer: what a tool call
 * gets instead of running when its caller has no usable per-user credential. The error carries the
 * payload for the HTTP 401 of POST /v1/mcp/tool/execute and, as `toolResult`, the JSON the agent loop
 * hands to the model verbatim (the same body as that 401).
 */
import { GatewayError } from "../../errors.js";

/** The `mcp_auth_required` object of the 401 body. */
export interface AuthRequiredPayload {
  kind: "headers";
  submit_url: string;
  message: string;
  mcp_client_id: string;
  mcp_client_name: string;
  required_header_keys: string[];
  /** ISO 8601. */
  expires_at: string;
}

/** The whole 401 body. */
export interface AuthRequiredBody {
  error: { type: "mcp_auth_required"; message: string };
  mcp_auth_required: AuthRequiredPayload;
}

/** Thrown by McpRuntime.execute() when the caller must submit header values first. */
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
