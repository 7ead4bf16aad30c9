/**
 * What the OpenAPI document says about each REST-bridged RPC beyond its http rule: the credentials it
 * accepts, from the access its proto declares (refined where an RPC reads fewer or other credentials
 * than its kind), and the 4xx statuses its service gives (the bridge adds 400, and 413 and 415 for a body).
 */
import { Access } from "../../../gen/gw/api/v1/access_pb.js";
import { accessOf } from "../../services/access.js";
import type { OperationFacts, SecurityRequirement } from "../rest/openapi.js";
import type { RestRoute } from "../rest/route-table.js";
import { ADMIN, CALLER, FLOW_SUBMITTER, IDENTIFIED_CALLER, OPEN } from "./security-schemes.js";

/** The facts of one RPC the access option does not give. */
interface RpcFacts {
  /** 4xx status -> its cause, beyond the bridge's own and the admin 401. */
  readonly errors?: Readonly<Record<number, string>>;
  /** The credentials it reads, where they differ from what its access implies. */
  readonly security?: readonly SecurityRequirement[];
}

const ADMIN_401 = "No admin session while auth_config.is_enabled (admin_session_required).";
const KEY_401 = "An unknown virtual key, or none while client.enforce_governance is on.";
const KEY_403 = "The virtual key is inactive.";

const mcpClient404 = { errors: { 404: "No MCP client has this client_id." } };
const provider404 = { errors: { 404: "No provider has this name." } };
const virtualKey404 = { errors: { 404: "No virtual key has this id." } };

/** Facts by `<Service>.<Method>`; an RPC that is absent has none beyond its access. */
const RPC_FACTS: Readonly<Record<string, RpcFacts>> = {
  "McpClientService.CreateMcpClient": {
    errors: {
      403: "A stdio client needs an admin session, so it cannot be created through the API while admin auth is off.",
      409: "Another MCP client has this name.",
      422: "The upstream rejected the user_headers of a per_user_headers client (upstream_verify_failed); nothing is stored.",
    },
  },
  "McpClientService.UpdateMcpClient": { errors: { ...mcpClient404.errors, 409: "Another MCP client has this name." } },
  "McpClientService.DeleteMcpClient": mcpClient404,
  "McpClientService.GetMcpClient": mcpClient404,
  "McpClientService.ReconnectMcpClient": mcpClient404,
  "McpClientService.CloseMcpClient": mcpClient404,
  "McpClientService.VerifyHeaders": {
    errors: {
      ...mcpClient404.errors,
      409: "The client is already verified and its admin discovery credential does not need an update (already_verified).",
      422: "The upstream rejected the values (upstream_verify_failed).",
    },
  },
  "McpClientService.Reauthorize": mcpClient404,
  "McpClientService.VerifyExchange": mcpClient404,
  "McpClientService.InitiateVerification": mcpClient404,
  "McpClientService.CompleteOauth": { errors: { 404: "No pending OAuth configuration has this id." } },

  "SessionService.Login": { errors: { 401: "Wrong admin username or password (invalid_credentials)." } },

  "McpToolService.ExecuteTool": {
    errors: {
      401: `${KEY_401} For a per-user client: no caller identity (mcp_identity_required), or no usable credential (mcp_auth_required, with an \`mcp_auth_required\` object beside \`error\` holding the submission link).`,
      403: `${KEY_403} Or the tool is outside the client's tools_to_execute or the key's mcp_configs (tool_not_allowed).`,
      404: "No MCP client has the name before the first hyphen (mcp_client_not_found), or the client did not list the tool in tools/list (tool_not_found).",
      409: "The client refuses tool calls in its state (needs_reauth, disabled, pending_verification, error).",
    },
  },

  "CredentialService.GetFlow": { errors: { 404: "No submission flow has this id (flow_not_found)." } },
  "CredentialService.SubmitFlow": {
    security: FLOW_SUBMITTER,
    errors: {
      401: "The flow needs a signed-in user, or a temp token, that the request lacks.",
      403: "A different user is signed in than the one the flow is bound to.",
      404: "No submission flow has this id (flow_not_found).",
      410: "The flow has expired (flow_expired) or was already used (flow_completed).",
      422: "The upstream rejected the values (upstream_verify_failed); with temp tokens, `temp_token` beside `error` is the replacement.",
    },
  },
  "CredentialService.ListSessions": { errors: { 401: `${KEY_401} Or no identity while auth_config.is_enabled (mcp_identity_required).` } },
  "CredentialService.RevokeSession": {
    errors: {
      401: `${KEY_401} Or no identity while auth_config.is_enabled (mcp_identity_required).`,
      404: "No credential with this id is visible to the caller (credential_not_found).",
    },
  },

  "ProviderService.CreateProvider": { errors: { 409: "A provider with this name exists." } },
  "ProviderService.UpdateProvider": provider404,
  "ProviderService.GetProvider": provider404,
  "ProviderService.DeleteProvider": provider404,
  "ProviderService.RefetchModels": provider404,
  "ProviderService.ClearModels": provider404,

  "GovernanceService.CreateVirtualKey": { errors: { 409: "Another virtual key has this id, name or value." } },
  "GovernanceService.GetVirtualKey": virtualKey404,
  "GovernanceService.UpdateVirtualKey": { errors: { ...virtualKey404.errors, 409: "Another virtual key has this name or value." } },
  "GovernanceService.DeleteVirtualKey": virtualKey404,

  // The catalog listing reads no credential; the compatibility listing reads only a virtual key.
  "ModelService.ListModels": { security: OPEN, errors: { 404: "The provider parameter names no configured provider (provider_not_found)." } },
  "ModelService.ListCompatModels": { security: CALLER, errors: { 401: KEY_401, 403: KEY_403 } },
};

/** The facts of a route: its credentials and the errors its service adds. */
export function rpcFacts(route: RestRoute): OperationFacts {
  const facts = RPC_FACTS[`${route.service.name}.${route.method.name}`] ?? {};
  switch (accessOf(route.method)) {
    case Access.PUBLIC:
      return { security: facts.security ?? OPEN, errors: { ...facts.errors } };
    case Access.CALLER:
      return { security: facts.security ?? IDENTIFIED_CALLER, errors: { ...facts.errors } };
    default:
      // ADMIN; an RPC declaring no access is refused at start-up, so it never reaches a served document.
      return { security: facts.security ?? ADMIN, errors: { 401: ADMIN_401, ...facts.errors } };
  }
}
