/**
 * The clients' lifecycle: loading the stored clients at boot and bringing each up in the background,
 * taking up configuration changes (add, update, remove, reload), the admin operations on one client
 * (reconnect, close, check, credential revoked or renewed), and shutdown.
 */
import { GatewayError } from "../../errors.js";
import { McpClientRecord, writeRecord } from "../../store/index.js";
import { allClients, recordToSpec } from "../client-repository.js";
import { ClientRuntime, type ClientSnapshot } from "../client-runtime.js";
import { isOauth } from "../client-spec.js";
import { afterSchemaChange } from "../credentials/status.js";
import { sweepExpired } from "../oauth/flows.js";
import { pinsOf } from "../tool-guardrails/tool-screens.js";
import type { RuntimeState } from "./runtime-state.js";
import type { ToolCatalog } from "./tool-catalog.js";

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

/**
 * Moves a per-user client's admin discovery credential through the schema change its stored header keys
 * imply; true when that changed it. Unchanged records are not flushed: a flush on the serving thread turns
 * Node 20's promise hooks on for good (store/native-transaction.ts).
 */
function applyDiscoverySchema(rec: McpClientRecord): boolean {
  if (rec.authType !== "per_user_headers" || rec.discoveryHeaders === null || rec.discoveryStatus === null) return false;
  const next = afterSchemaChange({ status: rec.discoveryStatus, values: rec.discoveryHeaders }, rec.perUserHeaderKeys);
  const status = next.status === "active" ? "active" : "needs_update";
  if (status === rec.discoveryStatus && JSON.stringify(next.values) === JSON.stringify(rec.discoveryHeaders)) return false;
  rec.discoveryHeaders = next.values;
  rec.discoveryStatus = status;
  return true;
}

/** Starts, reconfigures and stops the clients the runtime holds. */
export class ClientLifecycle {
  private closed = false;
  /** Clients start() found whose first connect or discovery has not finished: id -> name. */
  private readonly connectingAtStart = new Map<string, string>();
  private firstConnections: Promise<void> = Promise.resolve();

  constructor(
    private readonly state: RuntimeState,
    private readonly catalog: ToolCatalog,
  ) {}

  /** Loads every stored client and brings each up in the background (see firstConnectionsDone). */
  async start(): Promise<void> {
    const em = this.state.deps.store.fork();
    const records = await allClients(em);
    // The config file may have changed per_user_header_keys since the last boot: apply the schema-change
    // transition to the admin discovery credentials, then (below) to the per-user credentials.
    for (const rec of records) if (applyDiscoverySchema(rec)) await writeRecord(em, rec);
    // Credentials first: a tool call may arrive as soon as the first client is up.
    await this.state.credentials.load(records.map((rec) => ({ id: rec.id, spec: recordToSpec(rec) })));
    await this.loadOauthTokens(records);
    await sweepExpired(em, this.state.timing.now());
    const firsts = records.map((rec) => {
      this.connectingAtStart.set(rec.id, rec.name);
      return this.add(snapshotOf(rec))
        .catch((err: unknown) => this.state.deps.logger.error({ err, client_id: rec.id }, "could not start MCP client"))
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
    const em = this.state.deps.store.fork();
    const records = await em.find(McpClientRecord, { id: { $in: [...clientIds] } });
    for (const rec of records) if (applyDiscoverySchema(rec)) await writeRecord(em, rec);
    // An authorization completed on another node is in the store only: take its tokens before reconnecting.
    await this.loadOauthTokens(records);
    for (const rec of records) {
      if (rec.authType === "per_user_headers") await this.state.credentials.schemaChanged(rec.id, rec.perUserHeaderKeys);
      await this.update(snapshotOf(rec));
    }
  }

  /** Loads the stored OAuth tokens of the oauth clients among `records` into memory. */
  private loadOauthTokens(records: readonly McpClientRecord[]): Promise<void> {
    return this.state.oauth.load(records.filter((rec) => isOauth(rec.authType)).map((rec) => ({ id: rec.id, serverUrl: rec.connectionString ?? "" })));
  }

  /** Starts a new client and resolves once its first connect or discovery is recorded. */
  async add(snapshot: ClientSnapshot): Promise<ClientRuntime> {
    if (this.closed) throw new GatewayError("unavailable", "the gateway is shutting down");
    const { state, catalog } = this;
    const { deps, clients } = state;
    // Screened before anything can list or call them.
    await catalog.pinAndScreen(snapshot, snapshot.tools);
    const existing = clients.get(snapshot.id);
    if (existing) {
      await existing.update(snapshot);
      return existing;
    }
    const client = new ClientRuntime(snapshot, {
      screenTools: (id, tools) => catalog.screen(id, clients.get(id)?.spec ?? snapshot.spec, tools),
      sessions: deps.sessions,
      states: deps.states,
      logger: deps.logger,
      timing: state.timing,
      globalSyncMinutes: () => deps.settings.client.mcpToolSyncIntervalMinutes,
      persistTools: (id, tools) => catalog.persistTools(id, tools),
      bearer: (id) => state.oauth.source(id),
      discoveryRejected: async (id) => {
        await deps.store.fork().nativeUpdate(McpClientRecord, { id }, { discoveryStatus: "needs_update", updatedAt: new Date() });
      },
    });
    clients.set(snapshot.id, client);
    state.idsByName.set(snapshot.spec.name, snapshot.id);
    try {
      await client.start();
    } finally {
      catalog.toolsMayHaveChanged();
    }
    return client;
  }

  /** Applies a changed configuration (rename, headers, enable/disable, verification). */
  async update(snapshot: ClientSnapshot): Promise<void> {
    const client = this.state.clients.get(snapshot.id);
    if (!client) {
      await this.add(snapshot);
      return;
    }
    const { idsByName } = this.state;
    this.state.exchanger.forgetClient(snapshot.id);
    await this.catalog.pinAndScreen(snapshot, snapshot.tools.length > 0 ? snapshot.tools : client.tools);
    if (client.spec.name !== snapshot.spec.name) idsByName.delete(client.spec.name);
    idsByName.set(snapshot.spec.name, snapshot.id);
    try {
      await client.update(snapshot);
    } finally {
      this.catalog.toolsMayHaveChanged();
    }
  }

  /** Stops and forgets a deleted client. */
  async remove(clientId: string): Promise<void> {
    const client = this.state.clients.get(clientId);
    if (!client) return;
    this.state.clients.delete(clientId);
    this.state.idsByName.delete(client.spec.name);
    this.state.exchanger.forgetClient(clientId);
    this.catalog.forget(clientId);
    await client.stop({ cutCalls: true });
    this.state.deps.states.remove(clientId);
    this.catalog.toolsMayHaveChanged();
  }

  /** Re-dials a sticky client; rejects with the upstream's error when the new connection fails. */
  async reconnect(clientId: string): Promise<void> {
    await this.state.held(clientId).reconnect();
  }

  /** An admin revoked a client's OAuth credential: the client goes to needs_reauth. */
  credentialRevoked(clientId: string, message: string): void {
    this.state.clients.get(clientId)?.credentialDied(message);
  }

  /** Puts a client on its newly authorized OAuth credential: re-dial (make-before-break) or start again. */
  async credentialRenewed(clientId: string): Promise<void> {
    await this.state.clients.get(clientId)?.credentialRenewed();
  }

  /** Closes a sticky client's connection until the next reconnect. */
  async close(clientId: string): Promise<void> {
    await this.state.held(clientId).closeConnection();
  }

  /** Runs one check of a client now (tests and tooling). */
  async check(clientId: string): Promise<void> {
    await this.state.held(clientId).check();
  }

  /** Closes every connection and kills every stdio child. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.catalog.stopWatching();
    const all = [...this.state.clients.values()];
    this.state.clients.clear();
    this.state.idsByName.clear();
    await Promise.all(all.map((c) => c.stop()));
    await this.state.deps.sessions.close();
  }
}
