/**
 * Per-user upstream credentials for per_user_headers and per_user_oauth clients: which credential a call
 * uses, the lazy auth-required flow with its browser submission or OAuth consent, the stored credentials'
 * statuses, and the sessions listing. The MCP runtime owns one instance; services reach it as `runtime.credentials`.
 * The work is split three ways, over one shared CredentialState: the request path (credential-lookup.ts),
 * gathering credentials from users (credential-flows.ts) and managing the stored ones (credential-admin.ts).
 */
import type { BearerSource } from "../oauth/bearer-fetch.js";
import type { McpAuthRequiredError } from "./auth-required.js";
import { CredentialAdmin, type AccessCheck, type CredentialScope, type SessionView } from "./credential-admin.js";
import { CredentialFlows, type FlowView, type SubmitAuth, type UserCallbackOutcome, type UserCallbackQuery } from "./credential-flows.js";
import { CredentialLookup } from "./credential-lookup.js";
import { CredentialState, type PerUserClient, type PerUserCredentialsDeps } from "./credential-state.js";
import type { FlowKind } from "./flows.js";
import type { CallerIdentity } from "./identity.js";
import type { StoredCredential } from "./repository.js";

export { McpAuthRequiredError, type AuthRequiredBody, type AuthRequiredPayload } from "./auth-required.js";
export { FLOW_TTL_MS, AUTH_PAGE_PATH, FLOW_BROWSER_COOKIE } from "./flows.js";
export { SESSION_ID_HEADER, describeIdentity, identityRequired, pickIdentity, sessionIdentity, type CallerIdentity, type IdentityKind } from "./identity.js";
export { originOfHeaders } from "./request-origin.js";
export { keyHasClientAccess } from "./status.js";
export { type PerUserClient, type PerUserCredentialsDeps } from "./credential-state.js";
export { FLOW_EXPIRED_MESSAGE, SubmitVerifyError, type FlowView, type SubmitAuth, type UserCallbackOutcome, type UserCallbackQuery } from "./credential-flows.js";
export { type AccessCheck, type CredentialScope, type SessionView } from "./credential-admin.js";

/**
 * Per-user credentials of every per_user_headers and per_user_oauth client. Each method hands its call
 * straight to the part that does the work, returning that part's promise as it is, so a call takes no
 * more turns of the event loop than it would in one class.
 */
export class PerUserCredentials {
  private readonly lookup: CredentialLookup;
  private readonly flows: CredentialFlows;
  private readonly admin: CredentialAdmin;

  constructor(deps: PerUserCredentialsDeps) {
    const state = new CredentialState(deps);
    this.lookup = new CredentialLookup(state);
    this.flows = new CredentialFlows(state);
    this.admin = new CredentialAdmin(state);
  }

  /** The header values of the caller's usable credential, from memory; null when it has none, the inline 401 when it has no identity. */
  valuesForCall(client: PerUserClient, identity: CallerIdentity | null | undefined): Record<string, string> | null {
    return this.lookup.valuesForCall(client, identity);
  }

  /** Opens (or reuses) a header flow for the caller and builds the mcp_auth_required answer. */
  authRequired(client: PerUserClient, identity: CallerIdentity, origin: string | null = null): Promise<McpAuthRequiredError> {
    return this.lookup.authRequired(client, identity, origin);
  }

  /** The token source of the caller's per_user_oauth credential, from memory; rejects with the auth-required answer when it has none. */
  bearerForCall(client: PerUserClient, identity: CallerIdentity | null | undefined, origin: string | null = null): Promise<BearerSource & { readonly lastSent: string | null }> {
    return this.lookup.bearerForCall(client, identity, origin);
  }

  /** Refreshes the token `sent` of the caller's credential after the upstream rejected it (shared with concurrent callers). */
  refreshRejected(client: PerUserClient, identity: CallerIdentity, sent: string): Promise<void> {
    return this.lookup.refreshRejected(client, identity, sent);
  }

  /** The mcp_auth_required answer (kind oauth) when the caller's credential is now unusable, else null. */
  oauthAuthRequiredIfDead(client: PerUserClient, identity: CallerIdentity, origin: string | null): Promise<McpAuthRequiredError | null> {
    return this.lookup.oauthAuthRequiredIfDead(client, identity, origin);
  }

  /** Opens (or reuses) an oauth flow for the caller and builds the mcp_auth_required answer. */
  oauthAuthRequired(client: PerUserClient, identity: CallerIdentity, origin: string | null): Promise<McpAuthRequiredError> {
    return this.lookup.oauthAuthRequired(client, identity, origin);
  }

  /** The page's Connect button: the authorization URL of an oauth flow, for the flow's own identity only. */
  connectOauth(flowId: string, auth: SubmitAuth): Promise<{ authorizeUrl: string; expiresAt: Date }> {
    return this.flows.connectOauth(flowId, auth);
  }

  /** The OAuth callback for a per-user flow; undefined when the state belongs to no per-user flow. */
  oauthCallback(query: UserCallbackQuery, finisher: () => Promise<SubmitAuth>): Promise<UserCallbackOutcome | undefined> {
    return this.flows.oauthCallback(query, finisher);
  }

  /** An admin's "Edit values" on a stored credential: the URL of the flow that replaces it. */
  editFlow(credentialId: string, identityName: string, origin: string | null): Promise<{ url: string; kind: FlowKind; expiresAt: Date }> {
    return this.flows.editFlow(credentialId, identityName, origin);
  }

  /** Describes a flow for the browser page (GetFlow). */
  describeFlow(flowId: string): Promise<FlowView> {
    return this.flows.describeFlow(flowId);
  }

  /** Verifies submitted header values against the upstream and stores them as the flow identity's credential. */
  submit(flowId: string, headers: Readonly<Record<string, string>>, auth: SubmitAuth): Promise<StoredCredential> {
    return this.flows.submit(flowId, headers, auth);
  }

  /** Loads the stored credentials and applies the schema changes made while the gateway was down. */
  load(clients: readonly PerUserClient[]): Promise<void> {
    return this.admin.load(clients);
  }

  /** The credentials in scope, after bringing virtual-key credentials in line with their keys' current access. */
  list(scope: CredentialScope, access?: AccessCheck): Promise<SessionView[]> {
    return this.admin.list(scope, access);
  }

  /** Revokes (deletes) a credential in scope; one out of scope is reported as not found. */
  revoke(credentialId: string, scope: CredentialScope): Promise<StoredCredential> {
    return this.admin.revoke(credentialId, scope);
  }

  /** The admin changed a client's per_user_header_keys: applies the schema-change transition to its credentials. */
  schemaChanged(clientId: string, keys: readonly string[]): Promise<number> {
    return this.admin.schemaChanged(clientId, keys);
  }

  /** Orphans or restores virtual-key credentials as their keys' access to their clients changed. */
  reconcileAccess(access: AccessCheck, only: { virtualKeyId?: string; clientId?: string } = {}): Promise<void> {
    return this.admin.reconcileAccess(access, only);
  }

  /** Another node stored, changed or revoked a credential: this node's cache takes the row as stored. */
  credentialChanged(credentialId: string): Promise<void> {
    return this.admin.credentialChanged(credentialId);
  }

  /** After missed change notifications: every credential is read again. */
  reloadAll(): Promise<void> {
    return this.admin.reloadAll();
  }

  /** A virtual key was deleted: its credentials and flows go with it. */
  virtualKeyRemoved(virtualKeyId: string): Promise<void> {
    return this.admin.virtualKeyRemoved(virtualKeyId);
  }

  /** A client was deleted: its credentials and flows go with it. */
  clientRemoved(clientId: string): Promise<void> {
    return this.admin.clientRemoved(clientId);
  }
}
