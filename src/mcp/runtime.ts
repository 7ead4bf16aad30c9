/**
 * The runtime manager: every client's live side, found by id or by name, and tool execution by
 * prefixed name. The admin services tell it about configuration changes; the request path asks it to
 * run tools and never touches the database (tool lists are kept here and persisted in the background).
 * Every tool call goes through here (execute() for /v1, agent and code mode and /mcp; the relay's links
 * for /mcp/<name>), so this is where the tool_input and tool_output guardrails run, and every tool list
 * is screened (tool_definition guardrails, tool pinning) before callers see it.
 */
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { GatewayError } from "../errors.js";
import { McpClientRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import type { CustomLabelValues, GovernanceLabels, McpErrorType, Metrics } from "../telemetry/metrics.js";
import { allClients, recordToSpec } from "./client-repository.js";
import { isOauth, needsVerification } from "./client-spec.js";
import { McpAuthRequiredError, PerUserCredentials, describeIdentity, identityRequired, type CallerIdentity } from "./credentials/index.js";
import { TokenExchangeError, TokenExchanger } from "./token-exchange/exchanger.js";
import { afterSchemaChange } from "./credentials/status.js";
import { sweepExpired } from "./oauth/flows.js";
import { OauthTokens } from "./oauth/oauth-tokens.js";
import { ClientRuntime, DEFAULT_TIMING, type CallerCredential, type ClientSnapshot, type RuntimeTiming } from "./client-runtime.js";
import type { RuntimeClientView, RuntimeStateSource } from "./client-state.js";
import type { DiscoveredTool } from "./discover.js";
import type { StateRegistry } from "./state-registry.js";
import { prefixedToolName, splitToolName, toolAllowed, toolAutoExecutable } from "./tool-names.js";
import type { SessionFactory, ToolCallResult } from "./upstream-session.js";
import type { TraceNode } from "../telemetry/tracing.js";
import type { RelayCredentialContext, RelaySource } from "./relay/relay-source.js";
import { guardedCall } from "./tool-guardrails/guarded-call.js";
import { guardedLink } from "./tool-guardrails/guarded-link.js";
import { toolCallGuard, type ToolCallFacts, type ToolGuardrailDeps } from "./tool-guardrails/tool-call-guard.js";
import { storePins } from "./tool-guardrails/stored-pins.js";
import { pinsOf, ToolScreens, visibleTools } from "./tool-guardrails/tool-screens.js";

/** What the runtime needs. */
export interface McpRuntimeDeps {
  store: Store;
  logger: Logger;
  settings: RuntimeSettings;
  states: StateRegistry;
  sessions: SessionFactory;
  timing?: Partial<RuntimeTiming>;
  /** Records gw_mcp_client_operation_duration_seconds for every tool execution. */
  metrics?: Metrics;
  /** The SSO issuer's token endpoint, where token_exchange clients exchange by default (absent: none). */
  defaultTokenEndpoint?: () => Promise<string | null>;
  /** The guardrails of the tool stages (absent: none run; tool pinning still does). */
  guardrails?: ToolGuardrailDeps;
}

/** A tool as offered to models. */
export interface OfferedTool {
  /** `<client>-<tool>`. */
  name: string;
  clientId: string;
  clientName: string;
  tool: DiscoveredTool;
  /** In tools_to_auto_execute as well as tools_to_execute: agent mode runs it without approval. */
  autoExecute: boolean;
  /** The client's allow_on_all_virtual_keys: keys whose mcp_configs do not name it still see it. */
  allowOnAllVirtualKeys: boolean;
  /** The client's is_code_mode_client: callers reach the tool only through the code-mode meta-tools. */
  codeMode: boolean;
}

/** Options of one tool execution. */
export interface ExecuteOptions {
  /** Overrides tool_execution_timeout. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Virtual key labels of the tool's metric. */
  governance?: GovernanceLabels;
  /** Who is calling (user > virtual key > session); per_user_headers clients need it. */
  identity?: CallerIdentity | null;
  /** The signed-in caller's own IdP access token, which token_exchange clients exchange (never sent upstream). */
  subjectToken?: string | null;
  /** The origin the request came in by, for submission links when mcp_external_client_url is unset. */
  origin?: string | null;
  /** The request's dimension values for the metric's custom labels. */
  custom?: CustomLabelValues;
  /** The span the tool call's span hangs under, when the request is traced. */
  trace?: TraceNode;
}

/** The snapshot of a stored client. */
export function snapshotOf(rec: McpClientRecord): ClientSnapshot {
  return {
    id: rec.id,
    spec: recordToSpec(rec),
    verified: rec.verified,
    tools: rec.tools.map((t) => ({ ...t })),
    discoveryHeaders: rec.discoveryHeaders ? { ...rec.discoveryHeaders } : null,
    discoveryStatus: rec.discoveryStatus,
    toolPins: pinsOf(rec.toolPins),
  };
}

/** Moves a per-user client's admin discovery credential through the schema change its stored header keys imply. */
function applyDiscoverySchema(rec: McpClientRecord): void {
  if (rec.authType !== "per_user_headers" || rec.discoveryHeaders === null || rec.discoveryStatus === null) return;
  const next = afterSchemaChange({ status: rec.discoveryStatus, values: rec.discoveryHeaders }, rec.perUserHeaderKeys);
  rec.discoveryHeaders = next.values;
  rec.discoveryStatus = next.status === "active" ? "active" : "needs_update";
}

/** States that refuse tool calls, with the reason given to the caller. */
const REFUSING: Partial<Record<RuntimeClientView["state"], string>> = {
  needs_reauth: "its upstream credential was rejected; update the client's headers, or for an oauth client POST /api/mcp/client/{id}/reauthorize",
  disabled: "it is disabled",
  pending_verification: "its one-time verification is not done (per_user_headers: POST /api/mcp/client/{id}/verify-headers; oauth: initiate-verification, consent, then complete-oauth; token_exchange: POST /api/mcp/client/{id}/verify-exchange)",
  error: "it is not running in this instance",
};

/** The time limits of one tool execution. */
interface CallLimits {
  timeoutMs: number;
  deadline: AbortSignal;
  signal: AbortSignal;
}

/** True when the tool says a second run cannot do harm (read-only or idempotent), so a call the upstream rejected may be retried. */
function safeToRetry(client: ClientRuntime, tool: string): boolean {
  const hints = client.tools.find((t) => t.name === tool)?.annotations;
  return hints?.readOnlyHint === true || hints?.idempotentHint === true;
}

/** Holds the live side of every client. */
export class McpRuntime implements RuntimeStateSource {
  private readonly clients = new Map<string, ClientRuntime>();
  private readonly idsByName = new Map<string, string>();
  private readonly timing: RuntimeTiming;
  private closed = false;
  /** Clients start() found whose first connect or discovery has not finished: id -> name. */
  private readonly connectingAtStart = new Map<string, string>();
  private firstConnections: Promise<void> = Promise.resolve();
  /** Per-user credentials of the per_user_headers and per_user_oauth clients, cached in memory for the call path. */
  readonly credentials: PerUserCredentials;
  private readonly toolListeners = new Set<() => void>();
  /** What the /mcp/<client> relay reaches each client by, built once per client. */
  private readonly relaySources = new WeakMap<ClientRuntime, RelaySource>();
  /** The OAuth tokens of the oauth clients and the admin discovery credentials of per_user_oauth clients, in memory. */
  readonly oauth: OauthTokens;
  /** Exchanged upstream tokens of the token_exchange clients, cached in memory for the call path. */
  readonly exchanger: TokenExchanger;
  /** What callers may see of each client's tools (quarantine, redacted descriptions). */
  private readonly screens: ToolScreens;
  private readonly unwatchGuardrails: () => void;

  constructor(private readonly deps: McpRuntimeDeps) {
    this.timing = { ...DEFAULT_TIMING, ...deps.timing };
    // A client entering or leaving a refusing state adds or removes its tools from offeredTools().
    deps.states.onStateChange(() => this.toolsMayHaveChanged());
    this.credentials = new PerUserCredentials({
      store: deps.store,
      logger: deps.logger,
      settings: deps.settings,
      now: this.timing.now,
      verifyTimeoutMs: this.timing.operationTimeoutMs,
      oauthGrant: (id) => this.oauth.grantOf(id),
      clientOf: (id) => {
        const client = this.clients.get(id);
        return client ? { id, spec: client.spec } : undefined;
      },
    });
    this.exchanger = new TokenExchanger({ defaultTokenEndpoint: deps.defaultTokenEndpoint ?? (async () => null), now: this.timing.now });
    this.oauth = new OauthTokens({
      store: deps.store,
      logger: deps.logger,
      now: this.timing.now,
      onDead: (id, message) => this.clients.get(id)?.credentialDied(message),
    });
    this.screens = new ToolScreens({
      ...(deps.guardrails ? { guardrails: deps.guardrails } : {}),
      logger: deps.logger,
      storePins: (id, pins, replace) => storePins(deps.store, id, pins, replace),
      definitionChanged: (client, tool) => {
        deps.logger.warn({ client_id: client.id, client: client.name, tool }, `MCP tool definition changed since it was pinned; the tool is quarantined until POST /api/mcp/client/${client.id}/tools/{tool}/approve`);
        deps.metrics?.recordMcpToolDefinitionChange(client.name);
      },
      changed: () => this.toolsMayHaveChanged(),
    });
    // A tool_definition guardrail added, changed or removed may hide or release tools already discovered.
    this.unwatchGuardrails = deps.guardrails?.guardrails.onChange(() => void this.screenAll()) ?? (() => undefined);
  }

  /** The clock flows and tokens expire by (tests move it). */
  now(): number {
    return this.timing.now();
  }

  /** How many tools this runtime holds for a client (0 for one it does not hold). */
  toolsCount(clientId: string): number {
    return this.clients.get(clientId)?.tools.length ?? 0;
  }

  /** The ids of the clients this runtime holds. */
  clientIds(): string[] {
    return [...this.clients.keys()];
  }

  /** The live state of a client, or undefined when the runtime does not hold it. */
  stateOf(clientId: string): RuntimeClientView | undefined {
    return this.clients.has(clientId) ? this.deps.states.stateOf(clientId) : undefined;
  }

  /**
   * Calls `listener` (synchronously, with no argument) after anything that may change offeredTools():
   * a client added, updated or removed, a tool list re-synced, a state change. Returns the unsubscribe.
   */
  onToolsChanged(listener: () => void): () => void {
    this.toolListeners.add(listener);
    return () => this.toolListeners.delete(listener);
  }

  private toolsMayHaveChanged(): void {
    for (const listener of this.toolListeners) {
      try {
        listener();
      } catch (err) {
        this.deps.logger.error({ err }, "a tool-list listener failed");
      }
    }
  }

  /** Loads every stored client and brings each up in the background (see firstConnectionsDone). */
  async start(): Promise<void> {
    const em = this.deps.store.fork();
    const records = await allClients(em);
    // The config file may have changed per_user_header_keys since the last boot: apply the schema-change
    // transition to the admin discovery credentials, then (below) to the per-user credentials.
    for (const rec of records) applyDiscoverySchema(rec);
    await em.flush();
    // Credentials first: a tool call may arrive as soon as the first client is up.
    await this.credentials.load(records.map((rec) => ({ id: rec.id, spec: recordToSpec(rec) })));
    await this.oauth.load(records.filter((rec) => isOauth(rec.authType)).map((rec) => ({ id: rec.id, serverUrl: rec.connectionString ?? "" })));
    await sweepExpired(em, this.timing.now());
    const firsts = records.map((rec) => {
      this.connectingAtStart.set(rec.id, rec.name);
      return this.add(snapshotOf(rec))
        .catch((err: unknown) => this.deps.logger.error({ err, client_id: rec.id }, "could not start MCP client"))
        .finally(() => this.connectingAtStart.delete(rec.id));
    });
    this.firstConnections = Promise.all(firsts).then(() => undefined);
  }

  /**
   * Resolves once every client start() found has finished its first connect or discovery, passed or
   * failed; each is bounded by its retries and the operation timeout.
   */
  firstConnectionsDone(): Promise<void> {
    return this.firstConnections;
  }

  /** Names of the clients start() found whose first connect or discovery is still running. */
  stillConnecting(): string[] {
    return [...this.connectingAtStart.values()];
  }

  /**
   * Takes up stored clients the config file has just created or changed, as start() takes them up at
   * boot: the per_user_header_keys transition of their credentials, then their live side.
   */
  async reload(clientIds: readonly string[]): Promise<void> {
    if (clientIds.length === 0) return;
    const em = this.deps.store.fork();
    const records = await em.find(McpClientRecord, { id: { $in: [...clientIds] } });
    for (const rec of records) applyDiscoverySchema(rec);
    await em.flush();
    // An authorization completed on another node is in the store only: take its tokens before reconnecting.
    await this.oauth.load(records.filter((rec) => isOauth(rec.authType)).map((rec) => ({ id: rec.id, serverUrl: rec.connectionString ?? "" })));
    for (const rec of records) {
      if (rec.authType === "per_user_headers") await this.credentials.schemaChanged(rec.id, rec.perUserHeaderKeys);
      await this.update(snapshotOf(rec));
    }
  }

  /** Starts a new client and resolves once its first connect or discovery is recorded. */
  async add(snapshot: ClientSnapshot): Promise<ClientRuntime> {
    if (this.closed) throw new GatewayError("unavailable", "the gateway is shutting down");
    // Screened before anything can list or call them.
    this.screens.setPins(snapshot.id, snapshot.toolPins);
    await this.screens.screen(this.screenTarget(snapshot.id, snapshot.spec, snapshot.tools));
    const existing = this.clients.get(snapshot.id);
    if (existing) {
      await existing.update(snapshot);
      return existing;
    }
    const client = new ClientRuntime(snapshot, {
      screenTools: (id, tools) => this.screens.screen(this.screenTarget(id, this.clients.get(id)?.spec ?? snapshot.spec, tools)),
      sessions: this.deps.sessions,
      states: this.deps.states,
      logger: this.deps.logger,
      timing: this.timing,
      globalSyncMinutes: () => this.deps.settings.client.mcpToolSyncIntervalMinutes,
      persistTools: (id, tools) => this.persistTools(id, tools),
      bearer: (id) => this.oauth.source(id),
      discoveryRejected: async (id) => {
        await this.deps.store.fork().nativeUpdate(McpClientRecord, { id }, { discoveryStatus: "needs_update", updatedAt: new Date() });
      },
    });
    this.clients.set(snapshot.id, client);
    this.idsByName.set(snapshot.spec.name, snapshot.id);
    try {
      await client.start();
    } finally {
      this.toolsMayHaveChanged();
    }
    return client;
  }

  /** Applies a changed configuration (rename, headers, enable/disable, verification). */
  async update(snapshot: ClientSnapshot): Promise<void> {
    const client = this.clients.get(snapshot.id);
    if (!client) {
      await this.add(snapshot);
      return;
    }
    this.exchanger.forgetClient(snapshot.id);
    this.screens.setPins(snapshot.id, snapshot.toolPins);
    await this.screens.screen(this.screenTarget(snapshot.id, snapshot.spec, snapshot.tools.length > 0 ? snapshot.tools : client.tools));
    if (client.spec.name !== snapshot.spec.name) this.idsByName.delete(client.spec.name);
    this.idsByName.set(snapshot.spec.name, snapshot.id);
    try {
      await client.update(snapshot);
    } finally {
      this.toolsMayHaveChanged();
    }
  }

  /** Stops and forgets a deleted client. */
  async remove(clientId: string): Promise<void> {
    const client = this.clients.get(clientId);
    if (!client) return;
    this.clients.delete(clientId);
    this.idsByName.delete(client.spec.name);
    this.exchanger.forgetClient(clientId);
    this.screens.forget(clientId);
    await client.stop();
    this.deps.states.remove(clientId);
    this.toolsMayHaveChanged();
  }

  private held(clientId: string): ClientRuntime {
    const client = this.clients.get(clientId);
    if (!client) throw new GatewayError("failed_precondition", "the client is not running in this instance", { type: "mcp_client_unavailable" });
    return client;
  }

  /** Re-dials a sticky client; rejects with the upstream's error when the new connection fails. */
  async reconnect(clientId: string): Promise<void> {
    await this.held(clientId).reconnect();
  }

  /** An admin revoked a client's OAuth credential: the client goes to needs_reauth. */
  credentialRevoked(clientId: string, message: string): void {
    this.clients.get(clientId)?.credentialDied(message);
  }

  /** Puts a client on its newly authorized OAuth credential: re-dial (make-before-break) or start again. */
  async credentialRenewed(clientId: string): Promise<void> {
    await this.clients.get(clientId)?.credentialRenewed();
  }

  /** Closes a sticky client's connection until the next reconnect. */
  async close(clientId: string): Promise<void> {
    await this.held(clientId).closeConnection();
  }

  /** Runs one check of a client now (tests and tooling). */
  async check(clientId: string): Promise<void> {
    await this.held(clientId).check();
  }

  /** Whether the client of this name shows its tools to keys whose mcp_configs do not name it (false when unknown). */
  allowsAllVirtualKeys(clientName: string): boolean {
    const id = this.idsByName.get(clientName);
    return (id === undefined ? undefined : this.clients.get(id))?.spec.allowOnAllVirtualKeys ?? false;
  }

  /** The tools of every running client, filtered by its tools_to_execute, named `<client>-<tool>`. */
  offeredTools(): OfferedTool[] {
    const out: OfferedTool[] = [];
    for (const client of this.clients.values()) {
      const state = this.deps.states.stateOf(client.id)?.state;
      if (client.spec.disabled || (state && REFUSING[state])) continue;
      for (const tool of visibleTools(client.tools, this.screens.of(client.id))) {
        if (!toolAllowed(client.spec.toolsToExecute, tool.name)) continue;
        out.push({
          name: prefixedToolName(client.spec.name, tool.name),
          clientId: client.id,
          clientName: client.spec.name,
          tool,
          autoExecute: toolAutoExecutable(client.spec, tool.name),
          allowOnAllVirtualKeys: client.spec.allowOnAllVirtualKeys,
          codeMode: client.spec.isCodeModeClient,
        });
      }
    }
    return out;
  }

  /**
   * Executes `<client>-<tool>`. Caller mistakes (no such client, tool not allowed, client refusing
   * calls) throw; what happens upstream (tool error, failure, timeout) comes back as an error result.
   * A per-user (per_user_headers, per_user_oauth) client needs `identity`: without one the call is a 401 (mcp_identity_required),
   * and without a usable credential it throws McpAuthRequiredError, whose `toolResult` is the
   * mcp_auth_required JSON, and the tool does not run.
   */
  async execute(
    prefixedName: string,
    args: Record<string, unknown>,
    options: ExecuteOptions = {},
  ): Promise<ToolCallResult> {
    const parts = splitToolName(prefixedName);
    if (!parts) {
      throw new GatewayError("invalid_argument", `function.name: "${prefixedName}" is not a gateway tool name; use <client>-<tool>`, { field: "function.name" });
    }
    const id = this.idsByName.get(parts.client);
    const client = id === undefined ? undefined : this.clients.get(id);
    if (!client) throw new GatewayError("not_found", `no MCP client named "${parts.client}" (tool names are <client>-<tool>)`, { type: "mcp_client_not_found" });
    // From here on the call names a configured client, so it is a tool execution and is measured;
    // unparseable names and unknown clients are caller mistakes, not MCP operations.
    const started = performance.now();
    let errorType: McpErrorType = "_OTHER";
    const span = options.trace?.toolCall({ tool: parts.tool, client: client.spec.name, authType: client.spec.authType, name: prefixedName, args });
    let result: ToolCallResult | undefined;
    try {
      result = await this.run(client, parts.tool, prefixedName, args, options, span?.traceparent());
      if (!result.isError) errorType = "";
      return result;
    } catch (err) {
      if (err instanceof McpAuthRequiredError || (err instanceof GatewayError && err.type === "mcp_identity_required")) errorType = "auth_required";
      throw err;
    } finally {
      span?.end({ status: null, ...(errorType !== "" ? { errorType: errorType === "_OTHER" ? "tool_error" : errorType } : {}), ...(result ? { completion: result.content } : {}) });
      this.deps.metrics?.recordMcpToolCall({
        mcpClient: client.spec.name,
        toolName: parts.tool,
        durationS: (performance.now() - started) / 1000,
        errorType,
        ...(options.governance ? { governance: options.governance } : {}),
        ...(options.custom ? { custom: options.custom } : {}),
      });
    }
  }

  /** The checks, the guardrails and the upstream call of one execution (execute() measures it). */
  private async run(
    client: ClientRuntime,
    tool: string,
    prefixedName: string,
    args: Record<string, unknown>,
    options: ExecuteOptions,
    traceparent: string | undefined,
  ): Promise<ToolCallResult> {
    if (!toolAllowed(client.spec.toolsToExecute, tool)) {
      throw new GatewayError("permission_denied", `tool "${tool}" is not in tools_to_execute of MCP client "${client.spec.name}"`, { type: "tool_not_allowed" });
    }
    if (client.spec.disabled) throw this.refusal(client.spec.name, "disabled");
    if (needsVerification(client.spec.authType) && !client.verified) throw this.refusal(client.spec.name, "pending_verification");
    const state = this.deps.states.stateOf(client.id)?.state ?? "error";
    if (REFUSING[state]) throw this.refusal(client.spec.name, state);
    this.screens.refuseQuarantined({ id: client.id, name: client.spec.name }, tool);
    const guard = this.deps.guardrails ? toolCallGuard(this.deps.guardrails, this.callFacts(client, tool, options)) : null;
    return guardedCall(guard, args, (sent) => this.callUpstream(client, tool, prefixedName, sent, options, traceparent));
  }

  /** The guardrails' view of one call by the caller of `options`. */
  private callFacts(client: ClientRuntime, tool: string, options: ExecuteOptions): ToolCallFacts {
    return {
      clientId: client.id,
      clientName: client.spec.name,
      tool,
      // The metric's key labels are the caller's key: the same key whose guardrails cover the call.
      virtualKeyId: options.governance?.virtualKeyId ?? "",
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.trace ? { trace: options.trace } : {}),
      ...(options.custom ? { custom: options.custom } : {}),
    };
  }

  /** The upstream call of one execution, with the caller's credential where the client needs one. */
  private async callUpstream(
    client: ClientRuntime,
    tool: string,
    prefixedName: string,
    args: Record<string, unknown>,
    options: ExecuteOptions,
    traceparent: string | undefined,
  ): Promise<ToolCallResult> {
    const timeoutMs = options.timeoutMs ?? this.deps.settings.toolManager.toolExecutionTimeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    if (client.spec.authType === "per_user_oauth") return this.runAsCaller(client, tool, prefixedName, args, options, traceparent, { timeoutMs, deadline, signal });
    if (client.spec.authType === "token_exchange") return this.runExchanged(client, tool, prefixedName, args, options, traceparent, { timeoutMs, deadline, signal });
    // From memory: the per-user lookup never waits on the database.
    let userValues: Record<string, string> | undefined;
    if (client.mode === "per_user") {
      const perUser = { id: client.id, spec: client.spec };
      const identity = options.identity;
      if (!identity) throw identityRequired(client.spec.name);
      const values = this.credentials.valuesForCall(perUser, identity);
      // Without a usable credential the call fails anyway; opening its flow is the one write it waits on.
      if (values === null) throw await this.credentials.authRequired(perUser, identity, options.origin ?? null);
      userValues = values;
    }
    try {
      return await client.call(tool, args, timeoutMs, signal, userValues ? { values: userValues } : undefined, traceparent);
    } catch (err) {
      return this.failedResult(err, prefixedName, timeoutMs, deadline);
    }
  }

  /**
   * A per_user_oauth call with the caller's own token. When the upstream rejects it (401/403) the token is
   * refreshed; a grant the authorization server refused for good answers mcp_auth_required, so the caller
   * can consent again.
   */
  private runAsCaller(
    client: ClientRuntime,
    tool: string,
    prefixedName: string,
    args: Record<string, unknown>,
    options: ExecuteOptions,
    traceparent: string | undefined,
    limits: CallLimits,
  ): Promise<ToolCallResult> {
    const perUser = { id: client.id, spec: client.spec };
    const origin = options.origin ?? null;
    return this.callRetryingRejection(client, tool, prefixedName, args, traceparent, limits, {
      credential: async () => ({ bearer: await this.credentials.bearerForCall(perUser, options.identity, origin) }),
      rejected: async ({ bearer }) => {
        if (!options.identity) return false;
        // A 403 never reached the token source: refresh here (shared with a refresh already running).
        if (bearer.lastSent !== null) await this.credentials.refreshRejected(perUser, options.identity, bearer.lastSent).catch(() => undefined);
        const again = await this.credentials.oauthAuthRequiredIfDead(perUser, options.identity, origin);
        if (again) throw again;
        return true;
      },
    });
  }

  /**
   * A token_exchange call with a token exchanged for the caller. When the upstream rejects it (401/403) the
   * cached exchanged token is dropped, so the next call (or the retry) exchanges afresh.
   */
  private runExchanged(
    client: ClientRuntime,
    tool: string,
    prefixedName: string,
    args: Record<string, unknown>,
    options: ExecuteOptions,
    traceparent: string | undefined,
    limits: CallLimits,
  ): Promise<ToolCallResult> {
    return this.callRetryingRejection(client, tool, prefixedName, args, traceparent, limits, {
      credential: async () => ({ values: await this.exchangedHeaders(client, options) }),
      rejected: async () => {
        // exchangedHeaders only answers when both are set.
        if (options.identity && options.subjectToken) this.exchanger.forget(client.id, options.identity, options.subjectToken);
        return true;
      },
    });
  }

  /**
   * One call with a credential of the caller's that the upstream may reject (401/403). After a rejection
   * `rejected` renews what it can (false: the call fails with the error), and the call is retried once with
   * a fresh credential, but only for a tool whose annotations say it is read-only or idempotent; any other
   * call fails closed with the error (it may have had an effect before the rejection was seen).
   */
  private async callRetryingRejection<C extends CallerCredential>(
    client: ClientRuntime,
    tool: string,
    prefixedName: string,
    args: Record<string, unknown>,
    traceparent: string | undefined,
    limits: CallLimits,
    auth: { credential: () => Promise<C>; rejected: (sent: C) => Promise<boolean> },
  ): Promise<ToolCallResult> {
    const retryable = safeToRetry(client, tool);
    for (let attempt = 0; ; attempt++) {
      const credential = await auth.credential();
      try {
        return await client.call(tool, args, limits.timeoutMs, limits.signal, credential, traceparent);
      } catch (err) {
        if (!(err instanceof GatewayError && err.type === "upstream_auth_rejected")) return this.failedResult(err, prefixedName, limits.timeoutMs, limits.deadline);
        if (!(await auth.rejected(credential)) || attempt > 0 || !retryable) return this.failedResult(err, prefixedName, limits.timeoutMs, limits.deadline);
      }
    }
  }

  /** The error result of a call that failed upstream. */
  private failedResult(err: unknown, prefixedName: string, timeoutMs: number, deadline: AbortSignal): ToolCallResult {
    if (deadline.aborted || (err instanceof GatewayError && err.type === "upstream_timeout")) {
      return { content: `Error: tool ${prefixedName} timed out after ${timeoutMs} ms`, isError: true, raw: null };
    }
    const message = err instanceof Error ? err.message : String(err);
    return { content: `Error: tool ${prefixedName} failed: ${message}`, isError: true, raw: null };
  }

  /**
   * The Authorization header a token_exchange call carries: the caller's IdP token exchanged for one of
   * the MCP server. No identity is the inline 401; an identity without an IdP token, or an exchange the
   * identity provider refuses, is mcp_auth_required of kind "exchange" and the tool does not run.
   */
  private async exchangedHeaders(client: ClientRuntime, options: Pick<ExecuteOptions, "identity" | "subjectToken">): Promise<Record<string, string>> {
    const { spec } = client;
    if (!options.identity) throw identityRequired(spec.name);
    const base = { kind: "exchange" as const, mcp_client_id: client.id, mcp_client_name: spec.name };
    if (!options.subjectToken) {
      throw new McpAuthRequiredError({
        ...base,
        subject_token_missing: true,
        message: `MCP client "${spec.name}" acts as you at the upstream server and needs your own identity-provider token, which ${describeIdentity(options.identity)} does not carry: call with Authorization: Bearer <your IdP access token>, or sign in to the gateway through SSO`,
      });
    }
    if (!spec.tokenExchange) throw new GatewayError("internal", `token_exchange client "${spec.name}" has no token_exchange configuration`);
    try {
      const token = await this.exchanger.tokenFor(client.id, spec.tokenExchange, options.identity, options.subjectToken);
      return { Authorization: `Bearer ${token}` };
    } catch (err) {
      if (!(err instanceof TokenExchangeError)) throw err;
      this.deps.logger.info({ client_id: client.id, client: spec.name, identity_kind: options.identity.kind, error: err.message }, "token exchange refused");
      throw new McpAuthRequiredError({ ...base, subject_token_missing: false, exchange_error: err.message, message: `MCP client "${spec.name}" could not get a token for you: ${err.message}` });
    }
  }

  /** The client named `name` as the /mcp/<client> relay reaches it; undefined when this runtime holds none. */
  relaySource(name: string): RelaySource | undefined {
    const id = this.idsByName.get(name);
    const client = id === undefined ? undefined : this.clients.get(id);
    if (!client) return undefined;
    let source = this.relaySources.get(client);
    if (source === undefined) {
      source = this.newRelaySource(client);
      this.relaySources.set(client, source);
    }
    return source;
  }

  /** The relay's view of one client, reading its configuration live. */
  private newRelaySource(client: ClientRuntime): RelaySource {
    const opts = () => ({ timeoutMs: this.timing.operationTimeoutMs });
    return {
      clientId: client.id,
      get spec() {
        return client.spec;
      },
      refusal: () => this.refusalOf(client),
      tools: () => visibleTools(client.tools, this.screens.of(client.id)),
      guard: (link, caller) =>
        guardedLink(link, {
          screened: () => this.screens.of(client.id),
          guard: (tool, signal) => (this.deps.guardrails ? toolCallGuard(this.deps.guardrails, { clientId: client.id, clientName: client.spec.name, tool, virtualKeyId: caller.virtualKeyId ?? "", signal }) : null),
        }),
      requestTimeoutMs: () => this.deps.settings.toolManager.toolExecutionTimeoutMs,
      open: async (caller, capabilities) => client.openFor(await this.callerCredential(client, caller), capabilities, opts()),
      shared: () => client.sharedSession(opts()),
      operationDone: (method, tool, durationS, errorType, governance) =>
        this.deps.metrics?.recordMcpToolCall({ mcpClient: client.spec.name, toolName: tool, mcpMethod: method, durationS, errorType, ...(governance ? { governance } : {}) }),
    };
  }

  /** Why a client refuses calls now, as run() decides it, or null when it takes them. */
  private refusalOf(client: ClientRuntime): string | null {
    if (client.spec.disabled) return this.refusal(client.spec.name, "disabled").message;
    if (needsVerification(client.spec.authType) && !client.verified) return this.refusal(client.spec.name, "pending_verification").message;
    const state = this.deps.states.stateOf(client.id)?.state ?? "error";
    return REFUSING[state] ? this.refusal(client.spec.name, state).message : null;
  }

  /**
   * The caller's own credential for a per-user client (header values, an OAuth token source, an exchanged
   * token), as run() builds it; undefined for a client with one credential for everyone. Throws
   * McpAuthRequiredError, or the mcp_identity_required error, when the caller has none yet.
   */
  private async callerCredential(client: ClientRuntime, caller: RelayCredentialContext): Promise<CallerCredential | undefined> {
    const perUser = { id: client.id, spec: client.spec };
    switch (client.spec.authType) {
      case "per_user_oauth":
        return { bearer: await this.credentials.bearerForCall(perUser, caller.identity, caller.origin) };
      case "token_exchange":
        return { values: await this.exchangedHeaders(client, caller) };
      case "per_user_headers": {
        if (!caller.identity) throw identityRequired(client.spec.name);
        const values = this.credentials.valuesForCall(perUser, caller.identity);
        if (values === null) throw await this.credentials.authRequired(perUser, caller.identity, caller.origin);
        return { values };
      }
      default:
        return undefined;
    }
  }

  private refusal(name: string, state: keyof typeof REFUSING): GatewayError {
    return new GatewayError("failed_precondition", `MCP client "${name}" refuses tool calls: ${REFUSING[state] ?? state}`, {
      type: "mcp_client_unavailable",
      httpStatus: 409,
    });
  }

  /** What screening reads of a client. */
  private screenTarget(id: string, spec: ClientRuntime["spec"], tools: readonly DiscoveredTool[]) {
    return { id, name: spec.name, pinning: spec.toolPinning ?? false, tools };
  }

  /** Screens every client's tools again (the guardrails changed). */
  private async screenAll(): Promise<void> {
    await Promise.all([...this.clients.values()].map((client) => this.screens.screen(this.screenTarget(client.id, client.spec, client.tools))));
  }

  /** The client's discovered tool of this name, as the upstream listed it; undefined when there is none. */
  toolOf(clientId: string, toolName: string): DiscoveredTool | undefined {
    return this.clients.get(clientId)?.tools.find((tool) => tool.name === toolName);
  }

  /** Why each quarantined tool of the client is, by tool name (empty for a client this runtime does not hold). */
  quarantined(clientId: string): ReadonlyMap<string, string> {
    return this.screens.of(clientId).quarantined;
  }

  /**
   * Pins the current definition of a tool its pin quarantined; answers why it is still quarantined (a
   * tool_definition guardrail blocks it), or null. A tool the client lacks is a 404, one not quarantined
   * by its pin a 400.
   */
  approveTool(clientId: string, toolName: string): Promise<string | null> {
    const client = this.held(clientId);
    return this.screens.approve(this.screenTarget(clientId, client.spec, client.tools), toolName);
  }

  private async persistTools(clientId: string, tools: DiscoveredTool[]): Promise<void> {
    this.toolsMayHaveChanged();
    const em = this.deps.store.fork();
    await em.nativeUpdate(McpClientRecord, { id: clientId }, { tools, updatedAt: new Date() });
  }

  /** Closes every connection and kills every stdio child. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.unwatchGuardrails();
    const all = [...this.clients.values()];
    this.clients.clear();
    this.idsByName.clear();
    await Promise.all(all.map((c) => c.stop()));
    await this.deps.sessions.close();
  }
}
