/**
 * The runtime manager: every client's live side, found by id or by name, and tool execution by
 * prefixed name. The admin services tell it about configuration changes; the request path asks it to
 * run tools and never touches the database (tool lists are kept here and persisted in the background).
 * Every tool call goes through here (execute() for /v1, agent and code mode and /mcp; the relay's links
 * for /mcp/<name>), so this is where the tool_input and tool_output guardrails run, and every tool list
 * is screened (tool_definition guardrails, tool pinning) before callers see it.
 *
 * McpRuntime is a facade over its parts in ./runtime/: the shared state (RuntimeState), the clients'
 * lifecycle (ClientLifecycle), what callers see of their tools (ToolCatalog), tool execution
 * (ToolExecution, CallerCredentials) and the relay's view of each client (RelaySources).
 */
import type { ClientRuntime, ClientSnapshot } from "./client-runtime.js";
import type { RuntimeClientView, RuntimeStateSource } from "./client-state.js";
import type { PerUserCredentials } from "./credentials/index.js";
import type { DiscoveredTool } from "./discover.js";
import type { OauthTokens } from "./oauth/oauth-tokens.js";
import type { RelaySource } from "./relay/relay-source.js";
import type { TokenExchanger } from "./token-exchange/exchanger.js";
import type { ToolCallResult } from "./upstream-session.js";
import { CallerCredentials } from "./runtime/caller-credentials.js";
import { ClientLifecycle } from "./runtime/client-lifecycle.js";
import { RelaySources } from "./runtime/relay-sources.js";
import { RuntimeState, type McpRuntimeDeps } from "./runtime/runtime-state.js";
import { ToolCatalog, type OfferedTool } from "./runtime/tool-catalog.js";
import { ToolExecution, type ExecuteOptions } from "./runtime/tool-execution.js";

export { snapshotOf } from "./runtime/client-lifecycle.js";
export type { McpRuntimeDeps } from "./runtime/runtime-state.js";
export type { OfferedTool } from "./runtime/tool-catalog.js";
export type { ExecuteOptions } from "./runtime/tool-execution.js";

/** Holds the live side of every client. */
export class McpRuntime implements RuntimeStateSource {
  private readonly state: RuntimeState;
  private readonly lifecycle: ClientLifecycle;
  private readonly catalog: ToolCatalog;
  private readonly execution: ToolExecution;
  private readonly relay: RelaySources;
  /** Per-user credentials of the per_user_headers and per_user_oauth clients, cached in memory for the call path. */
  readonly credentials: PerUserCredentials;
  /** The OAuth tokens of the oauth clients and the admin discovery credentials of per_user_oauth clients, in memory. */
  readonly oauth: OauthTokens;
  /** Exchanged upstream tokens of the token_exchange clients, cached in memory for the call path. */
  readonly exchanger: TokenExchanger;

  constructor(deps: McpRuntimeDeps) {
    this.state = new RuntimeState(deps);
    ({ credentials: this.credentials, oauth: this.oauth, exchanger: this.exchanger } = this.state);
    this.catalog = new ToolCatalog(this.state);
    this.lifecycle = new ClientLifecycle(this.state, this.catalog);
    const callerCredentials = new CallerCredentials(this.state);
    this.execution = new ToolExecution(this.state, this.catalog, callerCredentials);
    this.relay = new RelaySources(this.state, this.catalog, callerCredentials);
  }

  /** The clock flows and tokens expire by (tests move it). */
  now(): number {
    return this.state.timing.now();
  }

  /** How many tools this runtime holds for a client (0 for one it does not hold). */
  toolsCount(clientId: string): number {
    return this.catalog.toolsCount(clientId);
  }

  /** The ids of the clients this runtime holds. */
  clientIds(): string[] {
    return [...this.state.clients.keys()];
  }

  /** The live state of a client, or undefined when the runtime does not hold it. */
  stateOf(clientId: string): RuntimeClientView | undefined {
    return this.catalog.stateOf(clientId);
  }

  /**
   * Calls `listener` (synchronously, with no argument) after anything that may change offeredTools():
   * a client added, updated or removed, a tool list re-synced, a state change. Returns the unsubscribe.
   */
  onToolsChanged(listener: () => void): () => void {
    return this.catalog.onToolsChanged(listener);
  }

  /** Loads every stored client and brings each up in the background (see firstConnectionsDone). */
  start(): Promise<void> {
    return this.lifecycle.start();
  }

  /**
   * Resolves once every client start() found has finished its first connect or discovery, passed or
   * failed; each is bounded by its retries and the operation timeout.
   */
  firstConnectionsDone(): Promise<void> {
    return this.lifecycle.firstConnectionsDone();
  }

  /** Names of the clients start() found whose first connect or discovery is still running. */
  stillConnecting(): string[] {
    return this.lifecycle.stillConnecting();
  }

  /**
   * Takes up stored clients the config file has just created or changed, as start() takes them up at
   * boot: the per_user_header_keys transition of their credentials, then their live side.
   */
  reload(clientIds: readonly string[]): Promise<void> {
    return this.lifecycle.reload(clientIds);
  }

  /** Starts a new client and resolves once its first connect or discovery is recorded. */
  add(snapshot: ClientSnapshot): Promise<ClientRuntime> {
    return this.lifecycle.add(snapshot);
  }

  /** Applies a changed configuration (rename, headers, enable/disable, verification). */
  update(snapshot: ClientSnapshot): Promise<void> {
    return this.lifecycle.update(snapshot);
  }

  /** Stops and forgets a deleted client. */
  remove(clientId: string): Promise<void> {
    return this.lifecycle.remove(clientId);
  }

  /** Re-dials a sticky client; rejects with the upstream's error when the new connection fails. */
  reconnect(clientId: string): Promise<void> {
    return this.lifecycle.reconnect(clientId);
  }

  /** An admin revoked a client's OAuth credential: the client goes to needs_reauth. */
  credentialRevoked(clientId: string, message: string): void {
    this.lifecycle.credentialRevoked(clientId, message);
  }

  /** Puts a client on its newly authorized OAuth credential: re-dial (make-before-break) or start again. */
  credentialRenewed(clientId: string): Promise<void> {
    return this.lifecycle.credentialRenewed(clientId);
  }

  /** Closes a sticky client's connection until the next reconnect. */
  close(clientId: string): Promise<void> {
    return this.lifecycle.close(clientId);
  }

  /** Runs one check of a client now (tests and tooling). */
  check(clientId: string): Promise<void> {
    return this.lifecycle.check(clientId);
  }

  /** Whether the client of this name shows its tools to keys whose mcp_configs do not name it (false when unknown). */
  allowsAllVirtualKeys(clientName: string): boolean {
    return this.catalog.allowsAllVirtualKeys(clientName);
  }

  /** The tools of every running client, filtered by its tools_to_execute, named `<client>-<tool>`. */
  offeredTools(): OfferedTool[] {
    return this.catalog.offeredTools();
  }

  /**
   * Executes `<client>-<tool>`. Caller mistakes (no such client, tool not allowed, client refusing
   * calls) throw; what happens upstream (tool error, failure, timeout) comes back as an error result.
   * A per-user (per_user_headers, per_user_oauth) client needs `identity`: without one the call is a 401 (mcp_identity_required),
   * and without a usable credential it throws McpAuthRequiredError, whose `toolResult` is the
   * mcp_auth_required JSON, and the tool does not run.
   */
  execute(prefixedName: string, args: Record<string, unknown>, options: ExecuteOptions = {}): Promise<ToolCallResult> {
    return this.execution.execute(prefixedName, args, options);
  }

  /** The client named `name` as the /mcp/<client> relay reaches it; undefined when this runtime holds none. */
  relaySource(name: string): RelaySource | undefined {
    return this.relay.of(name);
  }

  /** Every client this runtime holds as the /mcp relay reaches it (refusing ones included). */
  everyRelaySource(): RelaySource[] {
    return this.relay.all();
  }

  /** The client's discovered tool of this name, as the upstream listed it; undefined when there is none. */
  toolOf(clientId: string, toolName: string): DiscoveredTool | undefined {
    return this.catalog.toolOf(clientId, toolName);
  }

  /** Why each quarantined tool of the client is, by tool name (empty for a client this runtime does not hold). */
  quarantined(clientId: string): ReadonlyMap<string, string> {
    return this.catalog.quarantined(clientId);
  }

  /**
   * Pins the current definition of a tool its pin quarantined; answers why it is still quarantined (a
   * tool_definition guardrail blocks it), or null. A tool the client lacks is a 404, one not quarantined
   * by its pin a 400.
   */
  approveTool(clientId: string, toolName: string): Promise<string | null> {
    return this.catalog.approveTool(clientId, toolName);
  }

  /** Closes every connection and kills every stdio child. */
  shutdown(): Promise<void> {
    return this.lifecycle.shutdown();
  }
}
