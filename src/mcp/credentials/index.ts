/**
 * Per-user upstream credentials for per_user_headers clients: which credential a call uses, the lazy
 * auth-required flow with its browser submission, the stored credentials' statuses, and the sessions
 * listing. The MCP runtime owns one instance; services reach it as `runtime.credentials`.
 */
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { GatewayError, invalidField } from "../../errors.js";
import type { McpCredentialStatus, McpIdentityKind, Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import { validateUserHeaders, type McpClientSpec } from "../client-spec.js";
import { discoverTools, upstreamMessage } from "../discover.js";
import { perUserWireHeaders } from "../wire-headers.js";
import { McpAuthRequiredError } from "./auth-required.js";
import { AUTH_PAGE_PATH, FlowRegistry, flowUrl, type Flow } from "./flows.js";
import { describeIdentity, identityRequired, type CallerIdentity } from "./identity.js";
import { CredentialRepository, type CredentialChange, type StoredCredential } from "./repository.js";
import { afterAccessChange, afterSchemaChange, usable, valueFor } from "./status.js";

export { McpAuthRequiredError, type AuthRequiredBody, type AuthRequiredPayload } from "./auth-required.js";
export { FLOW_TTL_MS, AUTH_PAGE_PATH } from "./flows.js";
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
}

/** Who is submitting a flow. */
export interface SubmitAuth {
  /** The signed-in user of the gateway, or null. */
  user: string | null;
  /** The x-gw-temp-token header, or null. */
  tempToken: string | null;
  /** Whether auth_config is enabled (then anonymous submissions need a temp token). */
  adminAuthEnabled: boolean;
}

/** A flow as the page and GetFlow show it. */
export interface FlowView {
  flowId: string;
  kind: "headers";
  status: "pending" | "completed" | "expired";
  clientId: string;
  clientName: string;
  identity: CallerIdentity;
  requiredHeaderKeys: string[];
  adminHeaderKeys: string[];
  storedHeaderKeys: string[];
  expiresAt: Date;
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

/** The spec's exact words for a flow past its 15 minutes. */
export const FLOW_EXPIRED_MESSAGE = "Headers submission flow has expired";

function flowExpired(): GatewayError {
  return new GatewayError("failed_precondition", `${FLOW_EXPIRED_MESSAGE}; call the tool again to get a fresh link`, { type: "flow_expired", httpStatus: 410 });
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

  constructor(private readonly deps: PerUserCredentialsDeps) {
    this.repo = new CredentialRepository(deps.store, deps.now);
    this.flows = new FlowRegistry(deps.now);
    this.verifyTimeoutMs = deps.verifyTimeoutMs ?? 30_000;
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
      if (!client || client.spec.authType !== "per_user_headers") {
        stale.push(cred.id);
        continue;
      }
      const state = { status: cred.status, values: { ...cred.values } };
      const next = afterSchemaChange(state, client.spec.perUserHeaderKeys);
      if (next !== state) changes.set(cred.id, next);
    }
    await this.repo.update(changes);
    await this.repo.remove(stale);
  }

  /**
   * The hot path: the header values to attach to a per-user call, from memory. Throws the inline 401 when
   * the caller has no identity and McpAuthRequiredError (with a flow) when it has no usable credential.
   */
  valuesForCall(client: PerUserClient, identity: CallerIdentity | null | undefined, origin: string | null = null): Record<string, string> {
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
    throw this.authRequired(client, identity, origin);
  }

  /** Opens (or reuses) a flow for the caller and builds the mcp_auth_required answer. */
  authRequired(client: PerUserClient, identity: CallerIdentity, origin: string | null = null): McpAuthRequiredError {
    const withToken = this.deps.settings.client.mcpEnableTempTokenAuth && identity.kind !== "user";
    const flow = this.flows.open(client.id, identity, withToken);
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

  private flowOrThrow(flowId: string): Flow {
    const flow = flowId === "" ? undefined : this.flows.get(flowId);
    if (!flow) throw new GatewayError("not_found", "no such submission flow: call the tool again to get a fresh link", { type: "flow_not_found" });
    return flow;
  }

  private clientOfFlow(flow: Flow): PerUserClient {
    const client = this.deps.clientOf(flow.clientId);
    if (!client || client.spec.authType !== "per_user_headers") {
      throw new GatewayError("not_found", "the MCP client of this submission flow no longer exists", { type: "flow_not_found" });
    }
    return client;
  }

  /** Describes a flow for the browser page (GetFlow). */
  describeFlow(flowId: string): FlowView {
    const flow = this.flowOrThrow(flowId);
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
      requiredHeaderKeys: [...client.spec.perUserHeaderKeys],
      adminHeaderKeys: Object.keys(client.spec.headers),
      storedHeaderKeys: storedKeys,
      expiresAt: new Date(flow.expiresAt),
    };
  }

  /** Refuses a submitter who may not finish this flow. */
  private authorize(flow: Flow, auth: SubmitAuth): "token" | "other" {
    if (flow.identity.kind === "user") {
      if (auth.user === flow.identity.id) return "other";
      throw new GatewayError(
        auth.user === null ? "unauthenticated" : "permission_denied",
        `this flow binds a credential to user "${flow.identity.name}": sign in as that user (POST /api/session/login) and submit with Authorization: Bearer <session token>`,
        { type: "flow_user_mismatch" },
      );
    }
    if (auth.user !== null) return "other";
    if (flow.tokenAuth) {
      if (this.flows.tokenMatches(flow, auth.tempToken)) return "token";
      throw new GatewayError(
        "unauthenticated",
        "the link's temp token is missing, already used or not this flow's: send the #t= value of the link as the x-gw-temp-token header, or call the tool again for a fresh link",
        { type: "temp_token_invalid" },
      );
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
    const flow = this.flowOrThrow(flowId);
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
    if (how === "token") this.flows.spendToken(flow);
    try {
      await this.verify(spec, values);
    } catch (err) {
      const retry = how === "token" ? this.flows.replaceToken(flow) : null;
      const detail = redactValues(upstreamMessage(err), Object.values(values));
      throw new SubmitVerifyError(`upstream verify failed: ${detail}`, retry);
    }
    const saved = await this.repo.save(client.id, flow.identity.kind, flow.identity.id, values);
    this.flows.complete(flow);
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
        headerKeys: Object.keys(cred.values),
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
    return cred;
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
      const status = afterAccessChange({ status: cred.status, values: { ...cred.values } }, allowed, client.spec.perUserHeaderKeys);
      if (status !== cred.status) changes.set(cred.id, { status });
    }
    await this.repo.update(changes);
    for (const [id, change] of changes) {
      const cred = this.repo.get(id);
      this.deps.logger.info({ client_id: cred?.clientId, credential_id: id, virtual_key_id: cred?.identityId, status: change.status }, "per-user credential status changed by a virtual key's access");
    }
  }

  /** A virtual key was deleted: its credentials and flows go with it. */
  async virtualKeyRemoved(virtualKeyId: string): Promise<void> {
    this.flows.forgetIdentity("vk", virtualKeyId);
    await this.repo.remove(this.repo.all().filter((c) => c.identityKind === "vk" && c.identityId === virtualKeyId).map((c) => c.id));
  }

  /** A client was deleted: its credentials and flows go with it. */
  async clientRemoved(clientId: string): Promise<void> {
    this.flows.forgetClient(clientId);
    await this.repo.remove(this.repo.all().filter((c) => c.clientId === clientId).map((c) => c.id));
  }
}
