/**
 * The request path of the per-user credentials: what a tool call needs from its caller's stored credential
 * (header values or an OAuth token source), read from memory, and the mcp_auth_required answer, with a flow
 * opened for it, when the caller has none that is usable.
 */
import type { BearerSource } from "../oauth/bearer-fetch.js";
import { McpAuthRequiredError } from "./auth-required.js";
import type { CredentialState, PerUserClient } from "./credential-state.js";
import { connectUrl, flowUrl } from "./flows.js";
import { describeIdentity, identityRequired, type CallerIdentity } from "./identity.js";
import { UserOauthTokens, holdsAccessToken } from "./oauth-tokens.js";
import type { StoredCredential } from "./repository.js";
import { usable } from "./status.js";

/** Finds the credential a per-user call uses, or the auth-required answer that asks the caller for one. */
export class CredentialLookup {
  private readonly userTokens: UserOauthTokens;

  constructor(private readonly state: CredentialState) {
    this.userTokens = new UserOauthTokens({ repo: state.repo, logger: state.deps.logger, now: state.deps.now, grant: (id) => state.grantOf(id) });
  }

  /**
   * The hot path: the header values to attach to a per-user call, from memory. Throws the inline 401 when
   * the caller has no identity; null when it has no usable credential (then `authRequired` opens a flow).
   */
  valuesForCall(client: PerUserClient, identity: CallerIdentity | null | undefined): Record<string, string> | null {
    if (!identity) throw identityRequired(client.spec.name);
    const cred = this.state.repo.find(client.id, identity.kind, identity.id);
    if (cred && usable(cred, client.spec.perUserHeaderKeys)) return { ...cred.values };
    if (cred && identity.kind === "vk" && cred.status === "orphaned" && usable({ ...cred, status: "active" }, client.spec.perUserHeaderKeys)) {
      this.restore(cred);
      return { ...cred.values };
    }
    return null;
  }

  /**
   * Callers check the key's mcp_configs before executing, so a virtual key whose orphaned credential reached
   * a call has access again (changed in the config file, say): the credential is restored, and the restore
   * is recorded off the call path so the call does not wait for the database.
   */
  private restore(cred: StoredCredential): void {
    this.state.repo.update(new Map([[cred.id, { status: "active" }]])).catch((err: unknown) => {
      this.state.deps.logger.error({ err, credential_id: cred.id }, "could not record a restored per-user credential");
    });
  }

  /** Opens (or reuses) a flow for the caller and builds the mcp_auth_required answer. */
  async authRequired(client: PerUserClient, identity: CallerIdentity, origin: string | null = null): Promise<McpAuthRequiredError> {
    const flow = await this.state.flows.open(client.id, identity, this.state.withTempToken(identity));
    const url = flowUrl(flow, this.state.base(origin));
    const keys = [...client.spec.perUserHeaderKeys];
    const expiresAt = new Date(flow.expiresAt).toISOString();
    const existing = this.state.repo.find(client.id, identity.kind, identity.id);
    const why =
      existing?.status === "needs_update"
        ? `its required headers changed, so the values on file for ${describeIdentity(identity)} need an update`
        : existing?.status === "orphaned"
          ? `the credential on file for ${describeIdentity(identity)} is orphaned`
          : `no credential is on file for ${describeIdentity(identity)}`;
    const message =
      `MCP client "${client.spec.name}" needs your own credentials (${keys.join(", ")}) and ${why}. ` +
      `Open ${url} to submit them, then call the tool again. The link expires at ${expiresAt}.`;
    this.state.deps.logger.info(
      { client_id: client.id, client: client.spec.name, identity_kind: identity.kind, ...(identity.kind === "session" ? {} : { identity: identity.name }) },
      "per-user credential required: submission flow opened",
    );
    return new McpAuthRequiredError({
      kind: "headers",
      submit_url: url,
      message,
      mcp_client_id: client.id,
      mcp_client_name: client.spec.name,
      required_header_keys: keys,
      expires_at: expiresAt,
    });
  }

  /**
   * The hot path of a per_user_oauth call: the token source of the caller's own credential, from memory.
   * Throws the inline 401 when the caller has no identity and McpAuthRequiredError (kind oauth, with a
   * consent flow) when it has no usable token.
   */
  async bearerForCall(client: PerUserClient, identity: CallerIdentity | null | undefined, origin: string | null = null): Promise<BearerSource & { readonly lastSent: string | null }> {
    if (!identity) throw identityRequired(client.spec.name);
    const cred = this.state.repo.find(client.id, identity.kind, identity.id);
    if (cred && holdsAccessToken(cred.values)) {
      if (cred.status === "active") return this.userTokens.source(cred.id, client.spec.name);
      if (cred.status === "orphaned" && identity.kind === "vk") {
        this.restore(cred);
        return this.userTokens.source(cred.id, client.spec.name);
      }
    }
    throw await this.oauthAuthRequired(client, identity, origin);
  }

  /** Refreshes the token `sent` of the caller's credential after the upstream rejected it (shared with concurrent callers). */
  async refreshRejected(client: PerUserClient, identity: CallerIdentity, sent: string): Promise<void> {
    const cred = this.state.repo.find(client.id, identity.kind, identity.id);
    if (cred) await this.userTokens.refresh(cred.id, sent);
  }

  /** The mcp_auth_required answer (kind oauth) when the caller's credential is now unusable, else null. */
  async oauthAuthRequiredIfDead(client: PerUserClient, identity: CallerIdentity, origin: string | null): Promise<McpAuthRequiredError | null> {
    const cred = this.state.repo.find(client.id, identity.kind, identity.id);
    return cred && cred.status !== "needs_update" ? null : this.oauthAuthRequired(client, identity, origin);
  }

  /** Opens (or reuses) an oauth flow for the caller, with an authorization to consent to, and builds the mcp_auth_required answer. */
  async oauthAuthRequired(client: PerUserClient, identity: CallerIdentity, origin: string | null): Promise<McpAuthRequiredError> {
    const flow = await this.state.flows.open(client.id, identity, this.state.withTempToken(identity), "oauth");
    const pending = await this.state.authorization(client, flow);
    const url = flowUrl(flow, this.state.base(origin));
    // A user's consent starts at the gateway, which checks who is signed in before handing out the state.
    const authorizeUrl = identity.kind === "user" ? connectUrl(flow, this.state.base(origin)) : pending.authorizeUrl;
    const expiresAt = new Date(flow.expiresAt).toISOString();
    const existing = this.state.repo.find(client.id, identity.kind, identity.id);
    const why =
      existing?.status === "needs_update"
        ? `the OAuth grant on file for ${describeIdentity(identity)} was refused by the authorization server`
        : existing?.status === "orphaned"
          ? `the OAuth grant on file for ${describeIdentity(identity)} is orphaned`
          : `no OAuth grant is on file for ${describeIdentity(identity)}`;
    const message =
      `MCP client "${client.spec.name}" needs your own OAuth consent and ${why}. ` +
      `Open ${url} and click Connect (or open ${authorizeUrl} directly), then call the tool again. The link expires at ${expiresAt}.`;
    this.state.deps.logger.info(
      { client_id: client.id, client: client.spec.name, identity_kind: identity.kind, ...(identity.kind === "session" ? {} : { identity: identity.name }) },
      "per-user OAuth consent required: flow opened",
    );
    return new McpAuthRequiredError({
      kind: "oauth",
      mcp_client_id: client.id,
      mcp_client_name: client.spec.name,
      message,
      authorize_url: authorizeUrl,
      session_id: flow.id,
      submit_url: url,
      expires_at: expiresAt,
    });
  }
}
