/**
 * Per-user upstream credentials for per_user_headers and per_user_oauth clients: which credential a call
 * uses, the lazy auth-required flow with its browser submission or OAuth consent, the stored credentials'
 * statuses, and the sessions listing. The MCP runtime owns one instance; services reach it as `runtime.credentials`.
 */
import { randomBytes } from "node:crypto";
import { startAuthorization as authorizationUrlOf } from "@modelcontextprotocol/sdk/client/auth.js";
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { GatewayError, invalidField } from "../../errors.js";
import type { McpCredentialStatus, McpIdentityKind, Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import { validateUserHeaders, type McpClientSpec } from "../client-spec.js";
import { discoverTools, upstreamMessage } from "../discover.js";
import { perUserWireHeaders } from "../wire-headers.js";
import { exchangeCode, oauthFailure, revokeToken, type GrantContext } from "../oauth/authorization.js";
import type { BearerSource } from "../oauth/bearer-fetch.js";
import { hashState } from "../oauth/flows.js";
import { McpAuthRequiredError } from "./auth-required.js";
import { AUTH_PAGE_PATH, connectUrl, FlowRegistry, flowUrl, type Flow, type FlowKind, type PendingAuthorization } from "./flows.js";
import { UserOauthTokens, clientOfValues, holdsAccessToken, revocableTokens, tokenValues } from "./oauth-tokens.js";
import { describeIdentity, identityRequired, type CallerIdentity } from "./identity.js";
import { CredentialRepository, type CredentialChange, type StoredCredential } from "./repository.js";
import { afterAccessChange, afterSchemaChange, usable, valueFor } from "./status.js";

export { McpAuthRequiredError, type AuthRequiredBody, type AuthRequiredPayload } from "./auth-required.js";
export { FLOW_TTL_MS, AUTH_PAGE_PATH, FLOW_BROWSER_COOKIE } from "./flows.js";
export { SESSION_ID_HEADER, describeIdentity, identityRequired, pickIdentity, sessionIdentity, type CallerIdentity, type IdentityKind } from "./identity.js";
export { originOfHeaders } from "./request-origin.js";
export { keyHasClientAccess } from "./status.js";

/** A client as the credential code needs it. */
export interface PerUserClient {
  id: string;
  spec: McpClientSpec;
}

/** What the credential code needs. */
export interface PerUserCredentialsDeps {
  store: Store;
  logger: Logger;
  settings: RuntimeSettings;
  /** Milliseconds since the epoch (tests move it to expire flows). */
  now: () => number;
  /** The live configuration of a client, or undefined when it does not exist. */
  clientOf: (clientId: string) => PerUserClient | undefined;
  /** Bounds each one-time upstream verify of submitted values. */
  verifyTimeoutMs?: number;
  /** per_user_oauth: the grant context of the client's admin authorization (discovery, registered client, redirect URI). */
  oauthGrant?: (clientId: string) => GrantContext | undefined;
}

/** What the OAuth callback reports to the page for a per-user flow. */
export interface UserCallbackOutcome {
  flowId: string;
  status: "authorized" | "failed";
  message: string;
  clientId: string;
  clientName: string;
}

/** The callback's query. */
export interface UserCallbackQuery {
  code: string;
  state: string;
  error: string;
  errorDescription: string;
}

/** Who is finishing a flow (a header submission, a Connect, an OAuth callback). */
export interface SubmitAuth {
  /** The signed-in user of the gateway, or null. */
  user: string | null;
  /** The x-gw-temp-token header, or null. */
  tempToken: string | null;
  /** Whether auth_config is enabled (then anonymous submissions need a temp token). */
  adminAuthEnabled: boolean;
  /** The SSO user (IdP token or SSO session) behind the submission, by subject; may finish only their own user flows. */
  ssoUser?: string | null;
  /** Whom the request is signed in as, by the name people see (for refusals), or null. */
  signedInAs?: string | null;
  /** The browser's flow cookie (FLOW_BROWSER_COOKIE), or null. */
  browser?: string | null;
}

/** A flow as the page and GetFlow show it. */
export interface FlowView {
  flowId: string;
  kind: FlowKind;
  status: "pending" | "completed" | "expired";
  clientId: string;
  clientName: string;
  identity: CallerIdentity;
  requiredHeaderKeys: string[];
  adminHeaderKeys: string[];
  storedHeaderKeys: string[];
  expiresAt: Date;
  /** oauth flows: why the last authorization failed, null when none did. */
  error: string | null;
}

/** A stored credential as the sessions listing shows it: never its values. */
export interface SessionView {
  credentialId: string;
  clientId: string;
  clientName: string;
  identityKind: McpIdentityKind;
  identityId: string;
  status: McpCredentialStatus;
  headerKeys: string[];
  updatedAt: Date;
}

/** Whose credentials a listing or revoke may see: everything (an admin) or one identity's. */
export type CredentialScope = { all: true } | { all: false; identity: Pick<CallerIdentity, "kind" | "id"> };

/** Whether a virtual key (by id) may use the client named `clientName`; undefined when the key does not exist. */
export type AccessCheck = (virtualKeyId: string, clientName: string) => boolean | undefined;

/** A 422 for a submission the upstream rejected, with a fresh temp token for the Retry when the flow uses them. */
export class SubmitVerifyError extends GatewayError {
  constructor(
    message: string,
    readonly retryTempToken: string | null,
  ) {
    // No cause: the upstream's error object may hold the submitted values, and nothing may log them.
    super("failed_precondition", message, { type: "upstream_verify_failed", httpStatus: 422 });
  }
}

/** The documented words for a flow past its 15 minutes (docs/credentials-oauth-sso.md). */
export const FLOW_EXPIRED_MESSAGE = "Headers submission flow has expired";

function flowExpired(): GatewayError {
  return new GatewayError("failed_precondition", `${FLOW_EXPIRED_MESSAGE}; call the tool again to get a fresh link`, { type: "flow_expired", httpStatus: 410 });
}

function tempTokenInvalid(): GatewayError {
  return new GatewayError(
    "unauthenticated",
    "the link's temp token is missing, already used or not this flow's: send the #t= value of the link as the x-gw-temp-token header, or call the tool again for a fresh link",
    { type: "temp_token_invalid" },
  );
}

/** True when the request carries no sign-in at all (neither the admin session nor an SSO user). */
function noOneSignedIn(auth: SubmitAuth): boolean {
  return auth.user === null && auth.ssoUser == null;
}

/**
 * The refusal of a request that is not signed in as the user a flow is bound to: 403 when it is signed in as
 * someone else, 401 when it is signed in as nobody. `then` says what to do once signed in.
 */
function userRefusal(flow: Flow, auth: SubmitAuth, then: string): GatewayError {
  const bound = flow.identity.name;
  const how = "the SSO login, an IdP access token, or POST /api/session/login";
  if (noOneSignedIn(auth)) {
    return new GatewayError("unauthenticated", `this flow binds a credential to user "${bound}": sign in as that user (${how}) ${then}`, { type: "flow_user_mismatch" });
  }
  const other = auth.signedInAs ?? auth.ssoUser ?? auth.user ?? "";
  return new GatewayError(
    "permission_denied",
    `this flow binds a credential to user "${bound}", but this request is signed in as "${other}": only "${bound}" can finish it; sign in as that user (${how}) ${then}, or ask them to finish it`,
    { type: "flow_user_mismatch" },
  );
}

/** Replaces every submitted value an upstream might echo back in its error text. */
function redactValues(text: string, values: readonly string[]): string {
  let out = text;
  for (const value of values) if (value.length >= 3) out = out.split(value).join("<redacted>");
  return out;
}

/** Per-user credentials of every per_user_headers client. */
export class PerUserCredentials {
  private readonly repo: CredentialRepository;
  private readonly flows: FlowRegistry;
  private readonly verifyTimeoutMs: number;
  private warnedNoBase = false;
  private readonly userTokens: UserOauthTokens;

  constructor(private readonly deps: PerUserCredentialsDeps) {
    this.repo = new CredentialRepository(deps.store, deps.now);
    this.flows = new FlowRegistry(deps.store, deps.now);
    this.verifyTimeoutMs = deps.verifyTimeoutMs ?? 30_000;
    this.userTokens = new UserOauthTokens({ repo: this.repo, logger: deps.logger, now: deps.now, grant: (id) => this.grantOf(id) });
  }

  private grantOf(clientId: string): GrantContext | undefined {
    return this.deps.oauthGrant?.(clientId);
  }

  /**
   * Loads the stored credentials and applies schema changes made while the gateway was down (the config
   * file may have changed per_user_header_keys): active credentials whose keys no longer match need an update.
   */
  async load(clients: readonly PerUserClient[]): Promise<void> {
    await this.repo.load();
    const byId = new Map(clients.map((c) => [c.id, c]));
    const changes = new Map<string, CredentialChange>();
    const stale: string[] = [];
    for (const cred of this.repo.all()) {
      const client = byId.get(cred.clientId);
      if (!client || (client.spec.authType !== "per_user_headers" && client.spec.authType !== "per_user_oauth")) {
        stale.push(cred.id);
        continue;
      }
      if (client.spec.authType === "per_user_oauth") continue;
      const state = { status: cred.status, values: { ...cred.values } };
      const next = afterSchemaChange(state, client.spec.perUserHeaderKeys);
      if (next !== state) changes.set(cred.id, next);
    }
    await this.repo.update(changes);
    await this.repo.remove(stale);
  }

  /**
   * The hot path: the header values to attach to a per-user call, from memory. Throws the inline 401 when
   * the caller has no identity; null when it has no usable credential (then `authRequired` opens a flow).
   */
  valuesForCall(client: PerUserClient, identity: CallerIdentity | null | undefined): Record<string, string> | null {
    if (!identity) throw identityRequired(client.spec.name);
    const cred = this.repo.find(client.id, identity.kind, identity.id);
    if (cred && usable(cred, client.spec.perUserHeaderKeys)) return { ...cred.values };
    if (cred && identity.kind === "vk" && cred.status === "orphaned" && usable({ ...cred, status: "active" }, client.spec.perUserHeaderKeys)) {
      // Callers check the key's mcp_configs before executing, so a virtual key that got here has access
      // again (changed in the config file, say): restore its credential now and record that off the path.
      this.repo.update(new Map([[cred.id, { status: "active" }]])).catch((err: unknown) => {
        this.deps.logger.error({ err, credential_id: cred.id }, "could not record a restored per-user credential");
      });
      return { ...cred.values };
    }
    return null;
  }

  /** Opens (or reuses) a flow for the caller and builds the mcp_auth_required answer. */
  async authRequired(client: PerUserClient, identity: CallerIdentity, origin: string | null = null): Promise<McpAuthRequiredError> {
    const withToken = this.deps.settings.client.mcpEnableTempTokenAuth && identity.kind !== "user";
    const flow = await this.flows.open(client.id, identity, withToken);
    const url = flowUrl(flow, this.base(origin));
    const keys = [...client.spec.perUserHeaderKeys];
    const expiresAt = new Date(flow.expiresAt).toISOString();
    const existing = this.repo.find(client.id, identity.kind, identity.id);
    const why =
      existing?.status === "needs_update"
        ? `its required headers changed, so the values on file for ${describeIdentity(identity)} need an update`
        : existing?.status === "orphaned"
          ? `the credential on file for ${describeIdentity(identity)} is orphaned`
          : `no credential is on file for ${describeIdentity(identity)}`;
    const message =
      `MCP client "${client.spec.name}" needs your own credentials (${keys.join(", ")}) and ${why}. ` +
      `Open ${url} to submit them, then call the tool again. The link expires at ${expiresAt}.`;
    this.deps.logger.info(
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
    const cred = this.repo.find(client.id, identity.kind, identity.id);
    if (cred && holdsAccessToken(cred.values)) {
      if (cred.status === "active") return this.userTokens.source(cred.id, client.spec.name);
      if (cred.status === "orphaned" && identity.kind === "vk") {
        // As for header credentials: a key that reached the call has access again, so its credential is
        // restored, recorded off the call path.
        this.repo.update(new Map([[cred.id, { status: "active" }]])).catch((err: unknown) => {
          this.deps.logger.error({ err, credential_id: cred.id }, "could not record a restored per-user credential");
        });
        return this.userTokens.source(cred.id, client.spec.name);
      }
    }
    throw await this.oauthAuthRequired(client, identity, origin);
  }

  /** Refreshes the token `sent` of the caller's credential after the upstream rejected it (shared with concurrent callers). */
  async refreshRejected(client: PerUserClient, identity: CallerIdentity, sent: string): Promise<void> {
    const cred = this.repo.find(client.id, identity.kind, identity.id);
    if (cred) await this.userTokens.refresh(cred.id, sent);
  }

  /** The mcp_auth_required answer (kind oauth) when the caller's credential is now unusable, else null. */
  async oauthAuthRequiredIfDead(client: PerUserClient, identity: CallerIdentity, origin: string | null): Promise<McpAuthRequiredError | null> {
    const cred = this.repo.find(client.id, identity.kind, identity.id);
    return cred && cred.status !== "needs_update" ? null : this.oauthAuthRequired(client, identity, origin);
  }

  /** Opens (or reuses) an oauth flow for the caller, with an authorization to consent to, and builds the mcp_auth_required answer. */
  async oauthAuthRequired(client: PerUserClient, identity: CallerIdentity, origin: string | null): Promise<McpAuthRequiredError> {
    const withToken = this.deps.settings.client.mcpEnableTempTokenAuth && identity.kind !== "user";
    const flow = await this.flows.open(client.id, identity, withToken, "oauth");
    const pending = await this.authorization(client, flow);
    const url = flowUrl(flow, this.base(origin));
    // A user's consent starts at the gateway, which checks who is signed in before handing out the state.
    const authorizeUrl = identity.kind === "user" ? connectUrl(flow, this.base(origin)) : pending.authorizeUrl;
    const expiresAt = new Date(flow.expiresAt).toISOString();
    const existing = this.repo.find(client.id, identity.kind, identity.id);
    const why =
      existing?.status === "needs_update"
        ? `the OAuth grant on file for ${describeIdentity(identity)} was refused by the authorization server`
        : existing?.status === "orphaned"
          ? `the OAuth grant on file for ${describeIdentity(identity)} is orphaned`
          : `no OAuth grant is on file for ${describeIdentity(identity)}`;
    const message =
      `MCP client "${client.spec.name}" needs your own OAuth consent and ${why}. ` +
      `Open ${url} and click Connect (or open ${authorizeUrl} directly), then call the tool again. The link expires at ${expiresAt}.`;
    this.deps.logger.info(
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

  /**
   * The authorization an oauth flow waits for: the current one while its state is unspent, else a new one
   * (PKCE S256, a fresh single-use state) on the registration of the admin's authorization. No network.
   */
  private async authorization(client: PerUserClient, flow: Flow): Promise<PendingAuthorization> {
    if (flow.authorization?.stateHash) return flow.authorization;
    const grant = this.grantOf(client.id);
    const metadata = grant?.discovery.authorizationServerMetadata;
    if (!grant || !metadata) {
      throw new GatewayError("failed_precondition", `MCP client "${client.spec.name}" has no authorization server on file; an admin must authorize it first (POST /api/mcp/client/${client.id}/reauthorize)`, {
        type: "mcp_client_unavailable",
        httpStatus: 409,
      });
    }
    const configured = client.spec.oauthConfig?.scopes ?? [];
    const scopes = configured.length > 0 ? configured : (grant.discovery.resourceMetadata?.scopes_supported ?? []);
    const state = randomBytes(16).toString("base64url");
    const started = await authorizationUrlOf(grant.discovery.authorizationServerUrl, {
      metadata,
      clientInformation: grant.clientInformation,
      redirectUrl: grant.redirectUri,
      ...(scopes.length > 0 ? { scope: scopes.join(" ") } : {}),
      state,
      resource: grant.resource,
    });
    return this.flows.authorize(flow, state, started.codeVerifier, started.authorizationUrl.href);
  }

  /**
   * The page's Connect button: the authorization URL of an oauth flow, for the flow's own identity only
   * (the same rules as a header submission: the signed-in user of a user flow, the link's temp token).
   */
  async connectOauth(flowId: string, auth: SubmitAuth): Promise<{ authorizeUrl: string; expiresAt: Date }> {
    const flow = await this.flowOrThrow(flowId);
    if (flow.kind !== "oauth") throw new GatewayError("invalid_argument", "this flow takes header values, not an OAuth consent: submit them with PUT /api/mcp/per-user-headers/flows/{flow_id}", { type: "flow_kind_mismatch" });
    if (flow.completed) throw new GatewayError("failed_precondition", "this consent flow is already finished; call the tool again", { type: "flow_completed", httpStatus: 410 });
    if (this.flows.expired(flow)) throw new GatewayError("failed_precondition", "this consent flow has expired; call the tool again to get a fresh link", { type: "flow_expired", httpStatus: 410 });
    const client = this.clientOfFlow(flow);
    this.authorize(flow, auth);
    const pending = await this.authorization(client, flow);
    if (flow.identity.kind === "user" && auth.browser) await this.flows.bindBrowser(flow, auth.browser);
    return { authorizeUrl: pending.authorizeUrl, expiresAt: new Date(flow.expiresAt) };
  }

  /**
   * The OAuth callback for a per-user flow: spends the flow's single-use state, exchanges the code and
   * binds the token to the identity that opened the flow (no other). Undefined when the state belongs to
   * no per-user flow (the admin authorizations are looked up next); a flow past its 15 minutes is a 410.
   * A user's flow is finished only by a request signed in as that user, or from a browser that started the
   * authorization signed in as that user: anyone else is refused (403 signed in as another user, else 401)
   * after the state is spent, so the code it carries cannot be handed to that user's browser afterwards.
   * `finisher` reads who the request is signed in as; it is asked only for a user's flow.
   */
  async oauthCallback(query: UserCallbackQuery, finisher: () => Promise<SubmitAuth>): Promise<UserCallbackOutcome | undefined> {
    if (query.state === "") return undefined;
    const stateHash = hashState(query.state);
    const flow = await this.flows.byStateHash(stateHash);
    const pending = flow?.authorization;
    if (!flow || !pending) return undefined;
    // Spent at once, conditionally, so two callbacks racing with one state (on any nodes) cannot both pass.
    if (!(await this.flows.spendState(stateHash))) {
      throw new GatewayError("failed_precondition", "this authorization link was used once already; call the tool again for a fresh link", { type: "invalid_oauth_state" });
    }
    if (this.flows.expired(flow)) {
      throw new GatewayError("failed_precondition", "the consent flow expired before the authorization server answered (15 minutes); call the tool again for a fresh link", { type: "oauth_flow_expired", httpStatus: 410 });
    }
    const client = this.deps.clientOf(flow.clientId);
    if (!client || client.spec.authType !== "per_user_oauth" || flow.completed) {
      throw new GatewayError("failed_precondition", "this consent flow is finished or its MCP client no longer exists; call the tool again", { type: "invalid_oauth_state" });
    }
    if (flow.identity.kind === "user") {
      const auth = await finisher();
      if (!this.finishesAsUser(flow, auth) && !(noOneSignedIn(auth) && this.flows.browserStarted(pending, auth.browser ?? null))) {
        await this.flows.fail(flow, `the authorization server's answer reached a browser not signed in as ${describeIdentity(flow.identity)} and was refused; nothing was stored`);
        this.deps.logger.warn({ client_id: client.id, identity_kind: flow.identity.kind, signed_in: !noOneSignedIn(auth) }, "per-user OAuth callback refused: not the flow's user");
        throw userRefusal(flow, auth, "in the browser that finishes the consent, then open the flow's page and click Connect again");
      }
    }
    const outcome = (status: "authorized" | "failed", message: string): UserCallbackOutcome => ({ flowId: flow.id, status, message, clientId: client.id, clientName: client.spec.name });
    const fail = async (message: string): Promise<UserCallbackOutcome> => {
      await this.flows.fail(flow, message);
      this.deps.logger.warn({ client_id: client.id, identity_kind: flow.identity.kind, err: message }, "per-user OAuth authorization failed");
      return outcome("failed", message);
    };
    if (query.error !== "") return fail(`the authorization server refused: ${query.error}${query.errorDescription ? `: ${query.errorDescription}` : ""}`.slice(0, 512));
    if (query.code === "") return fail("the authorization server's redirect carried neither a code nor an error");
    const grant = this.grantOf(client.id);
    if (!grant) return fail("the client has no authorization server on file; an admin must reauthorize it");
    let tokens;
    try {
      tokens = await exchangeCode({ ...grant, code: query.code, codeVerifier: pending.codeVerifier });
    } catch (err) {
      return fail(oauthFailure("the authorization code exchange", err).message);
    }
    const saved = await this.repo.save(client.id, flow.identity.kind, flow.identity.id, tokenValues(tokens, grant.clientInformation, this.deps.now()));
    await this.flows.complete(flow);
    this.deps.logger.info({ client_id: client.id, client: client.spec.name, credential_id: saved.id, identity_kind: flow.identity.kind }, "per-user OAuth credential stored");
    return outcome("authorized", `connected: ${describeIdentity(flow.identity)} can now use "${client.spec.name}"`);
  }

  /**
   * An admin's "Edit values" on a stored credential: opens (or reuses) the same flow the lazy
   * mcp_auth_required answer would give its identity, and returns the flow's URL. Unlike the lazy path, a
   * link that could not be followed is refused: without mcp_external_client_url or a request origin the
   * admin is told which setting to set.
   */
  async editFlow(credentialId: string, identityName: string, origin: string | null): Promise<{ url: string; kind: FlowKind; expiresAt: Date }> {
    const cred = this.repo.get(credentialId);
    if (!cred) throw new GatewayError("not_found", `no per-user credential "${credentialId}": list them with GET /api/mcp/sessions`, { type: "credential_not_found" });
    const client = this.deps.clientOf(cred.clientId);
    if (!client || (client.spec.authType !== "per_user_headers" && client.spec.authType !== "per_user_oauth")) {
      throw new GatewayError("failed_precondition", `the MCP client of credential "${credentialId}" no longer takes per-user credentials; revoke the credential instead`, { type: "credential_orphaned" });
    }
    const external = this.deps.settings.client.mcpExternalClientUrl.trim();
    if (external === "" && origin === null) {
      throw new GatewayError("failed_precondition", `no public URL can be built for ${AUTH_PAGE_PATH}: set client.mcp_external_client_url`, { type: "external_url_unknown" });
    }
    const identity: CallerIdentity = { kind: cred.identityKind, id: cred.identityId, name: identityName };
    const withToken = this.deps.settings.client.mcpEnableTempTokenAuth && identity.kind !== "user";
    const kind: FlowKind = client.spec.authType === "per_user_oauth" ? "oauth" : "headers";
    const flow = await this.flows.open(client.id, identity, withToken, kind);
    if (kind === "oauth") await this.authorization(client, flow);
    this.deps.logger.info({ client_id: client.id, credential_id: cred.id, identity_kind: identity.kind }, "per-user credential edit: submission flow opened");
    return { url: flowUrl(flow, this.base(origin)), kind, expiresAt: new Date(flow.expiresAt) };
  }

  /** Where submission URLs point: mcp_external_client_url, else the origin the request came in by. */
  private base(origin: string | null): string {
    const external = this.deps.settings.client.mcpExternalClientUrl.trim();
    if (external !== "") return external;
    if (origin !== null) return origin;
    if (!this.warnedNoBase) {
      this.warnedNoBase = true;
      this.deps.logger.warn(`no public URL can be built for ${AUTH_PAGE_PATH}: set client.mcp_external_client_url`);
    }
    return "";
  }

  private async flowOrThrow(flowId: string): Promise<Flow> {
    const flow = flowId === "" ? undefined : await this.flows.get(flowId);
    if (!flow) throw new GatewayError("not_found", "no such submission flow: call the tool again to get a fresh link", { type: "flow_not_found" });
    return flow;
  }

  private clientOfFlow(flow: Flow): PerUserClient {
    const client = this.deps.clientOf(flow.clientId);
    if (!client || client.spec.authType !== (flow.kind === "oauth" ? "per_user_oauth" : "per_user_headers")) {
      throw new GatewayError("not_found", "the MCP client of this submission flow no longer exists", { type: "flow_not_found" });
    }
    return client;
  }

  /** Describes a flow for the browser page (GetFlow). */
  async describeFlow(flowId: string): Promise<FlowView> {
    const flow = await this.flowOrThrow(flowId);
    const client = this.clientOfFlow(flow);
    const stored = this.repo.find(client.id, flow.identity.kind, flow.identity.id);
    const storedKeys = stored ? client.spec.perUserHeaderKeys.filter((k) => valueFor(stored.values, k) !== undefined) : [];
    return {
      flowId: flow.id,
      kind: flow.kind,
      status: flow.completed ? "completed" : this.flows.expired(flow) ? "expired" : "pending",
      clientId: client.id,
      clientName: client.spec.name,
      identity: { ...flow.identity },
      requiredHeaderKeys: flow.kind === "oauth" ? [] : [...client.spec.perUserHeaderKeys],
      adminHeaderKeys: flow.kind === "oauth" ? [] : Object.keys(client.spec.headers),
      storedHeaderKeys: flow.kind === "oauth" ? [] : storedKeys,
      expiresAt: new Date(flow.expiresAt),
      error: flow.error,
    };
  }

  /** Whether the request is signed in as the user a flow is bound to (by admin session, IdP token or SSO session). */
  private finishesAsUser(flow: Flow, auth: SubmitAuth): boolean {
    return auth.user === flow.identity.id || (auth.ssoUser != null && auth.ssoUser === flow.identity.id);
  }

  /** Refuses a submitter who may not finish this flow. */
  private authorize(flow: Flow, auth: SubmitAuth): "token" | "other" {
    if (flow.identity.kind === "user") {
      if (this.finishesAsUser(flow, auth)) return "other";
      throw userRefusal(flow, auth, "and submit with that sign-in");
    }
    if (auth.user !== null) return "other";
    if (flow.tokenAuth) {
      if (this.flows.tokenMatches(flow, auth.tempToken)) return "token";
      throw tempTokenInvalid();
    }
    if (auth.adminAuthEnabled) {
      throw new GatewayError(
        "unauthenticated",
        "finishing this flow needs a gateway session (POST /api/session/login) or a link with a temp token (client.mcp_enable_temp_token_auth)",
        { type: "flow_session_required" },
      );
    }
    return "other";
  }

  /**
   * Verifies submitted values against the upstream with the client's live configuration and stores them
   * as the identity's active credential. Required headers already on file may be left out to keep them.
   */
  async submit(flowId: string, headers: Readonly<Record<string, string>>, auth: SubmitAuth): Promise<StoredCredential> {
    const flow = await this.flowOrThrow(flowId);
    if (flow.kind !== "headers") {
      throw new GatewayError("invalid_argument", "this flow is an OAuth consent, not a header submission: open its page and click Connect", { type: "flow_kind_mismatch" });
    }
    if (flow.completed) {
      throw new GatewayError("failed_precondition", "this submission flow is already finished; call the tool again if the values need to change", {
        type: "flow_completed",
        httpStatus: 410,
      });
    }
    if (this.flows.expired(flow)) throw flowExpired();
    const client = this.clientOfFlow(flow);
    const how = this.authorize(flow, auth);
    const { spec } = client;
    const declared = new Set(spec.perUserHeaderKeys.map((k) => k.toLowerCase()));
    for (const name of Object.keys(headers)) {
      if (!declared.has(name.toLowerCase())) throw invalidField(`headers.${name}`, `is not one of the required headers (${spec.perUserHeaderKeys.join(", ")})`);
    }
    const stored = this.repo.find(client.id, flow.identity.kind, flow.identity.id);
    const values: Record<string, string> = {};
    for (const key of spec.perUserHeaderKeys) {
      const given = valueFor(headers, key);
      const kept = stored ? valueFor(stored.values, key) : undefined;
      const value = given !== undefined && given !== "" ? given : kept;
      if (value === undefined) throw invalidField(`headers.${key}`, "is missing: every required header needs a value");
      values[key] = value;
    }
    validateUserHeaders(spec.perUserHeaderKeys, values, "headers");
    if (how === "token" && !(await this.flows.spendToken(flow))) throw tempTokenInvalid();
    try {
      await this.verify(spec, values);
    } catch (err) {
      const retry = how === "token" ? await this.flows.replaceToken(flow) : null;
      const detail = redactValues(upstreamMessage(err), Object.values(values));
      throw new SubmitVerifyError(`upstream verify failed: ${detail}`, retry);
    }
    const saved = await this.repo.save(client.id, flow.identity.kind, flow.identity.id, values);
    await this.flows.complete(flow);
    this.deps.logger.info(
      { client_id: client.id, client: spec.name, credential_id: saved.id, identity_kind: flow.identity.kind },
      "per-user credential stored",
    );
    return saved;
  }

  private async verify(spec: McpClientSpec, values: Record<string, string>): Promise<void> {
    if (spec.connectionType === "stdio" || spec.connectionString === null) {
      throw new GatewayError("failed_precondition", "per-user verification needs an http or sse client");
    }
    const headers = perUserWireHeaders(spec.headers, spec.perUserHeaderKeys, values);
    await discoverTools({ connectionType: spec.connectionType, connectionString: spec.connectionString }, headers, { timeoutMs: this.verifyTimeoutMs });
  }

  private inScope(cred: StoredCredential, scope: CredentialScope): boolean {
    return scope.all || (cred.identityKind === scope.identity.kind && cred.identityId === scope.identity.id);
  }

  /** The credentials in scope, after bringing virtual-key credentials in line with their keys' current access. */
  async list(scope: CredentialScope, access?: AccessCheck): Promise<SessionView[]> {
    if (access) await this.reconcileAccess(access);
    const out: SessionView[] = [];
    for (const cred of this.repo.all()) {
      if (!this.inScope(cred, scope)) continue;
      const client = this.deps.clientOf(cred.clientId);
      out.push({
        credentialId: cred.id,
        clientId: cred.clientId,
        clientName: client?.spec.name ?? "",
        identityKind: cred.identityKind,
        identityId: cred.identityId,
        status: cred.status,
        // An OAuth credential's values are tokens: their names say nothing to a user.
        headerKeys: client?.spec.authType === "per_user_oauth" ? [] : Object.keys(cred.values),
        updatedAt: cred.updatedAt,
      });
    }
    return out.sort((a, b) => a.clientName.localeCompare(b.clientName) || a.identityId.localeCompare(b.identityId));
  }

  /** Revokes (deletes) a credential in scope; one out of scope is reported as not found. */
  async revoke(credentialId: string, scope: CredentialScope): Promise<StoredCredential> {
    const cred = this.repo.get(credentialId);
    if (!cred || !this.inScope(cred, scope)) {
      throw new GatewayError("not_found", `no per-user credential "${credentialId}" visible to this caller`, { type: "credential_not_found" });
    }
    await this.repo.remove([cred.id]);
    this.deps.logger.info({ client_id: cred.clientId, credential_id: cred.id, identity_kind: cred.identityKind }, "per-user credential revoked");
    if (this.deps.clientOf(cred.clientId)?.spec.authType === "per_user_oauth") await this.revokeUpstream(cred);
    return cred;
  }

  /** Revokes an OAuth credential's tokens at the authorization server when it has a revocation endpoint; failures are logged only. */
  private async revokeUpstream(cred: StoredCredential): Promise<void> {
    const grant = this.grantOf(cred.clientId);
    if (!grant) return;
    try {
      for (const { token, hint } of revocableTokens(cred.values)) {
        if (!(await revokeToken({ ...grant, clientInformation: clientOfValues(cred.values, grant.clientInformation) }, token, hint))) break;
      }
    } catch (err) {
      this.deps.logger.warn({ client_id: cred.clientId, credential_id: cred.id, err: upstreamMessage(err) }, "per-user OAuth token revocation failed");
    }
  }

  /** The admin changed a client's per_user_header_keys: applies the schema-change transition to its credentials. */
  async schemaChanged(clientId: string, keys: readonly string[]): Promise<number> {
    const changes = new Map<string, CredentialChange>();
    for (const cred of this.repo.all()) {
      if (cred.clientId !== clientId) continue;
      const state = { status: cred.status, values: { ...cred.values } };
      const next = afterSchemaChange(state, keys);
      if (next !== state) changes.set(cred.id, next);
    }
    await this.repo.update(changes);
    if (changes.size > 0) this.deps.logger.info({ client_id: clientId, credentials: changes.size }, "per_user_header_keys changed: credentials need an update");
    return changes.size;
  }

  /**
   * Orphans virtual-key credentials whose key lost access to their client and restores those whose key
   * regained it; `only` narrows the work to one key or one client.
   */
  async reconcileAccess(access: AccessCheck, only: { virtualKeyId?: string; clientId?: string } = {}): Promise<void> {
    const changes = new Map<string, CredentialChange>();
    for (const cred of this.repo.all()) {
      if (cred.identityKind !== "vk") continue;
      if (only.virtualKeyId !== undefined && cred.identityId !== only.virtualKeyId) continue;
      if (only.clientId !== undefined && cred.clientId !== only.clientId) continue;
      const client = this.deps.clientOf(cred.clientId);
      if (!client) continue;
      const allowed = access(cred.identityId, client.spec.name) ?? false;
      // An OAuth credential has no header schema to fall behind: its own value names stand in for it.
      const keys = client.spec.authType === "per_user_oauth" ? Object.keys(cred.values) : client.spec.perUserHeaderKeys;
      const status = afterAccessChange({ status: cred.status, values: { ...cred.values } }, allowed, keys);
      if (status !== cred.status) changes.set(cred.id, { status });
    }
    await this.repo.update(changes);
    for (const [id, change] of changes) {
      const cred = this.repo.get(id);
      this.deps.logger.info({ client_id: cred?.clientId, credential_id: id, virtual_key_id: cred?.identityId, status: change.status }, "per-user credential status changed by a virtual key's access");
    }
  }

  /** Another node stored, changed or revoked a credential: this node's cache takes the row as stored. */
  async credentialChanged(credentialId: string): Promise<void> {
    await this.repo.reload(credentialId);
  }

  /** After missed change notifications: every credential is read again. */
  async reloadAll(): Promise<void> {
    await this.repo.load();
  }

  /** A virtual key was deleted: its credentials and flows go with it. */
  async virtualKeyRemoved(virtualKeyId: string): Promise<void> {
    await this.flows.forgetIdentity("vk", virtualKeyId);
    await this.repo.remove(this.repo.all().filter((c) => c.identityKind === "vk" && c.identityId === virtualKeyId).map((c) => c.id));
  }

  /** A client was deleted: its credentials and flows go with it. */
  async clientRemoved(clientId: string): Promise<void> {
    await this.flows.forgetClient(clientId);
    await this.repo.remove(this.repo.all().filter((c) => c.clientId === clientId).map((c) => c.id));
  }
}
