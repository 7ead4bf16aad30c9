/**
 * Gathering a per-user credential from its user: the browser page's flows (describe, header submission with
 * its one-time upstream verify, the OAuth Connect), the OAuth callback that binds a token to the identity
 * that opened the flow, and an admin's "Edit values" link. Who may finish a flow is decided here.
 */
import { GatewayError, invalidField } from "../../errors.js";
import { validateUserHeaders, type McpClientSpec } from "../client-spec.js";
import { discoverTools, upstreamMessage } from "../discover.js";
import { perUserWireHeaders } from "../wire-headers.js";
import { exchangeCode, oauthFailure } from "../oauth/authorization.js";
import { hashState } from "../oauth/flows.js";
import type { CredentialState, PerUserClient } from "./credential-state.js";
import { AUTH_PAGE_PATH, flowUrl, type Flow, type FlowKind } from "./flows.js";
import { tokenValues } from "./oauth-tokens.js";
import { describeIdentity, type CallerIdentity } from "./identity.js";
import type { StoredCredential } from "./repository.js";
import { valueFor } from "./status.js";

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

/** The per-user flows: the browser page, the OAuth callback and the admin's edit link. */
export class CredentialFlows {
  private readonly verifyTimeoutMs: number;

  constructor(private readonly state: CredentialState) {
    this.verifyTimeoutMs = state.deps.verifyTimeoutMs ?? 30_000;
  }

  /**
   * The page's Connect button: the authorization URL of an oauth flow, for the flow's own identity only
   * (the same rules as a header submission: the signed-in user of a user flow, the link's temp token).
   */
  async connectOauth(flowId: string, auth: SubmitAuth): Promise<{ authorizeUrl: string; expiresAt: Date }> {
    const flow = await this.flowOrThrow(flowId);
    if (flow.kind !== "oauth") throw new GatewayError("invalid_argument", "this flow takes header values, not an OAuth consent: submit them with PUT /api/mcp/per-user-headers/flows/{flow_id}", { type: "flow_kind_mismatch" });
    if (flow.completed) throw new GatewayError("failed_precondition", "this consent flow is already finished; call the tool again", { type: "flow_completed", httpStatus: 410 });
    if (this.state.flows.expired(flow)) throw new GatewayError("failed_precondition", "this consent flow has expired; call the tool again to get a fresh link", { type: "flow_expired", httpStatus: 410 });
    const client = this.clientOfFlow(flow);
    this.authorize(flow, auth);
    const pending = await this.state.authorization(client, flow);
    if (flow.identity.kind === "user" && auth.browser) await this.state.flows.bindBrowser(flow, auth.browser);
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
    const flow = await this.state.flows.byStateHash(stateHash);
    const pending = flow?.authorization;
    if (!flow || !pending) return undefined;
    // Spent at once, conditionally, so two callbacks racing with one state (on any nodes) cannot both pass.
    if (!(await this.state.flows.spendState(stateHash))) {
      throw new GatewayError("failed_precondition", "this authorization link was used once already; call the tool again for a fresh link", { type: "invalid_oauth_state" });
    }
    if (this.state.flows.expired(flow)) {
      throw new GatewayError("failed_precondition", "the consent flow expired before the authorization server answered (15 minutes); call the tool again for a fresh link", { type: "oauth_flow_expired", httpStatus: 410 });
    }
    const client = this.state.deps.clientOf(flow.clientId);
    if (!client || client.spec.authType !== "per_user_oauth" || flow.completed) {
      throw new GatewayError("failed_precondition", "this consent flow is finished or its MCP client no longer exists; call the tool again", { type: "invalid_oauth_state" });
    }
    if (flow.identity.kind === "user") {
      const auth = await finisher();
      if (!this.finishesAsUser(flow, auth) && !(noOneSignedIn(auth) && this.state.flows.browserStarted(pending, auth.browser ?? null))) {
        await this.state.flows.fail(flow, `the authorization server's answer reached a browser not signed in as ${describeIdentity(flow.identity)} and was refused; nothing was stored`);
        this.state.deps.logger.warn({ client_id: client.id, identity_kind: flow.identity.kind, signed_in: !noOneSignedIn(auth) }, "per-user OAuth callback refused: not the flow's user");
        throw userRefusal(flow, auth, "in the browser that finishes the consent, then open the flow's page and click Connect again");
      }
    }
    const outcome = (status: "authorized" | "failed", message: string): UserCallbackOutcome => ({ flowId: flow.id, status, message, clientId: client.id, clientName: client.spec.name });
    const fail = async (message: string): Promise<UserCallbackOutcome> => {
      await this.state.flows.fail(flow, message);
      this.state.deps.logger.warn({ client_id: client.id, identity_kind: flow.identity.kind, err: message }, "per-user OAuth authorization failed");
      return outcome("failed", message);
    };
    if (query.error !== "") return fail(`the authorization server refused: ${query.error}${query.errorDescription ? `: ${query.errorDescription}` : ""}`.slice(0, 512));
    if (query.code === "") return fail("the authorization server's redirect carried neither a code nor an error");
    const grant = this.state.grantOf(client.id);
    if (!grant) return fail("the client has no authorization server on file; an admin must reauthorize it");
    let tokens;
    try {
      tokens = await exchangeCode({ ...grant, code: query.code, codeVerifier: pending.codeVerifier });
    } catch (err) {
      return fail(oauthFailure("the authorization code exchange", err).message);
    }
    const saved = await this.state.repo.save(client.id, flow.identity.kind, flow.identity.id, tokenValues(tokens, grant.clientInformation, this.state.deps.now()));
    await this.state.flows.complete(flow);
    this.state.deps.logger.info({ client_id: client.id, client: client.spec.name, credential_id: saved.id, identity_kind: flow.identity.kind }, "per-user OAuth credential stored");
    return outcome("authorized", `connected: ${describeIdentity(flow.identity)} can now use "${client.spec.name}"`);
  }

  /**
   * An admin's "Edit values" on a stored credential: opens (or reuses) the same flow the lazy
   * mcp_auth_required answer would give its identity, and returns the flow's URL. Unlike the lazy path, a
   * link that could not be followed is refused: without mcp_external_client_url or a request origin the
   * admin is told which setting to set.
   */
  async editFlow(credentialId: string, identityName: string, origin: string | null): Promise<{ url: string; kind: FlowKind; expiresAt: Date }> {
    const cred = this.state.repo.get(credentialId);
    if (!cred) throw new GatewayError("not_found", `no per-user credential "${credentialId}": list them with GET /api/mcp/sessions`, { type: "credential_not_found" });
    const client = this.state.deps.clientOf(cred.clientId);
    if (!client || (client.spec.authType !== "per_user_headers" && client.spec.authType !== "per_user_oauth")) {
      throw new GatewayError("failed_precondition", `the MCP client of credential "${credentialId}" no longer takes per-user credentials; revoke the credential instead`, { type: "credential_orphaned" });
    }
    const external = this.state.deps.settings.client.mcpExternalClientUrl.trim();
    if (external === "" && origin === null) {
      throw new GatewayError("failed_precondition", `no public URL can be built for ${AUTH_PAGE_PATH}: set client.mcp_external_client_url`, { type: "external_url_unknown" });
    }
    const identity: CallerIdentity = { kind: cred.identityKind, id: cred.identityId, name: identityName };
    const kind: FlowKind = client.spec.authType === "per_user_oauth" ? "oauth" : "headers";
    const flow = await this.state.flows.open(client.id, identity, this.state.withTempToken(identity), kind);
    if (kind === "oauth") await this.state.authorization(client, flow);
    this.state.deps.logger.info({ client_id: client.id, credential_id: cred.id, identity_kind: identity.kind }, "per-user credential edit: submission flow opened");
    return { url: flowUrl(flow, this.state.base(origin)), kind, expiresAt: new Date(flow.expiresAt) };
  }

  private async flowOrThrow(flowId: string): Promise<Flow> {
    const flow = flowId === "" ? undefined : await this.state.flows.get(flowId);
    if (!flow) throw new GatewayError("not_found", "no such submission flow: call the tool again to get a fresh link", { type: "flow_not_found" });
    return flow;
  }

  private clientOfFlow(flow: Flow): PerUserClient {
    const client = this.state.deps.clientOf(flow.clientId);
    if (!client || client.spec.authType !== (flow.kind === "oauth" ? "per_user_oauth" : "per_user_headers")) {
      throw new GatewayError("not_found", "the MCP client of this submission flow no longer exists", { type: "flow_not_found" });
    }
    return client;
  }

  /** Describes a flow for the browser page (GetFlow). */
  async describeFlow(flowId: string): Promise<FlowView> {
    const flow = await this.flowOrThrow(flowId);
    const client = this.clientOfFlow(flow);
    const stored = this.state.repo.find(client.id, flow.identity.kind, flow.identity.id);
    const storedKeys = stored ? client.spec.perUserHeaderKeys.filter((k) => valueFor(stored.values, k) !== undefined) : [];
    return {
      flowId: flow.id,
      kind: flow.kind,
      status: flow.completed ? "completed" : this.state.flows.expired(flow) ? "expired" : "pending",
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
      if (this.state.flows.tokenMatches(flow, auth.tempToken)) return "token";
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
    if (this.state.flows.expired(flow)) throw flowExpired();
    const client = this.clientOfFlow(flow);
    const how = this.authorize(flow, auth);
    const { spec } = client;
    const declared = new Set(spec.perUserHeaderKeys.map((k) => k.toLowerCase()));
    for (const name of Object.keys(headers)) {
      if (!declared.has(name.toLowerCase())) throw invalidField(`headers.${name}`, `is not one of the required headers (${spec.perUserHeaderKeys.join(", ")})`);
    }
    const stored = this.state.repo.find(client.id, flow.identity.kind, flow.identity.id);
    const values: Record<string, string> = {};
    for (const key of spec.perUserHeaderKeys) {
      const given = valueFor(headers, key);
      const kept = stored ? valueFor(stored.values, key) : undefined;
      const value = given !== undefined && given !== "" ? given : kept;
      if (value === undefined) throw invalidField(`headers.${key}`, "is missing: every required header needs a value");
      values[key] = value;
    }
    validateUserHeaders(spec.perUserHeaderKeys, values, "headers");
    if (how === "token" && !(await this.state.flows.spendToken(flow))) throw tempTokenInvalid();
    try {
      await this.verify(spec, values);
    } catch (err) {
      const retry = how === "token" ? await this.state.flows.replaceToken(flow) : null;
      const detail = redactValues(upstreamMessage(err), Object.values(values));
      throw new SubmitVerifyError(`upstream verify failed: ${detail}`, retry);
    }
    const saved = await this.state.repo.save(client.id, flow.identity.kind, flow.identity.id, values);
    await this.state.flows.complete(flow);
    this.state.deps.logger.info(
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
}
