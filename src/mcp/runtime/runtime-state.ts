/**
 * The state McpRuntime's parts share: every client's live side by id and by name, the timing and clock,
 * and the in-memory credential stores the lifecycle loads and the call path reads.
 */
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { GatewayError } from "../../errors.js";
import type { Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import type { Metrics } from "../../telemetry/metrics.js";
import { DEFAULT_TIMING, type ClientRuntime, type RuntimeTiming } from "../client-runtime.js";
import { PerUserCredentials } from "../credentials/index.js";
import { OauthTokens } from "../oauth/oauth-tokens.js";
import type { StateRegistry } from "../state-registry.js";
import { TokenExchanger } from "../token-exchange/exchanger.js";
import type { ToolGuardrailDeps } from "../tool-guardrails/tool-call-guard.js";
import type { SessionFactory } from "../upstream-session.js";

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

/** The clients, timing and credential stores shared by the runtime's lifecycle, catalog and execution. */
export class RuntimeState {
  readonly clients = new Map<string, ClientRuntime>();
  readonly idsByName = new Map<string, string>();
  readonly timing: RuntimeTiming;
  /** Per-user credentials of the per_user_headers and per_user_oauth clients, cached in memory for the call path. */
  readonly credentials: PerUserCredentials;
  /** The OAuth tokens of the oauth clients and the admin discovery credentials of per_user_oauth clients, in memory. */
  readonly oauth: OauthTokens;
  /** Exchanged upstream tokens of the token_exchange clients, cached in memory for the call path. */
  readonly exchanger: TokenExchanger;

  constructor(readonly deps: McpRuntimeDeps) {
    this.timing = { ...DEFAULT_TIMING, ...deps.timing };
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
  }

  /** The client of this name, or undefined when none is held. */
  byName(name: string): ClientRuntime | undefined {
    const id = this.idsByName.get(name);
    return id === undefined ? undefined : this.clients.get(id);
  }

  /** The client of this id; throws mcp_client_unavailable when this instance does not hold it. */
  held(clientId: string): ClientRuntime {
    const client = this.clients.get(clientId);
    if (!client) throw new GatewayError("failed_precondition", "the client is not running in this instance", { type: "mcp_client_unavailable" });
    return client;
  }
}
