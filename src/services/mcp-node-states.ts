/**
 * Each node's view of the MCP clients, shared through the mcp_client_node_state table: every node
 * publishes what its own connections see (on every change, debounced, and with each heartbeat), and a
 * listing on any node shows all live nodes' views as `node_states` once more than one node is live. Nodes
 * that disagree among healthy, unstable and pending_verification make the reported state `degraded`.
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { NodeRegistry } from "../cluster/node-registry.js";
import { HEARTBEAT_INTERVAL_MS } from "../cluster/node-registry.js";
import type { ClientStateName, FailureStageName, LastFailureView, RuntimeClientView } from "../mcp/client-state.js";
import type { McpRuntime } from "../mcp/runtime.js";
import { McpClientNodeStateRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { enumInputNumber } from "../proto-json/enum-names.js";
import { create } from "@bufbuild/protobuf";
import { ClientStateSchema, NodeStateSchema, type McpClient, type NodeState } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { lastFailureMessage } from "./mcp-client-mapping.js";

/** States whose disagreement across nodes is reported as degraded. */
const COMPARABLE: ReadonlySet<ClientStateName> = new Set(["healthy", "unstable", "pending_verification"]);
const PUBLISH_DEBOUNCE_MS = 200;

/** One node's view of one client as stored. */
interface StoredView {
  state: ClientStateName;
  lastFailure: LastFailureView | null;
  toolsCount: number;
  updatedAt: Date;
}

/** Writes this node's view of its clients to the store while the node runs. */
export class NodeStatePublisher {
  readonly #store: Store;
  readonly #runtime: McpRuntime;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #debounce: NodeJS.Timeout | undefined;
  #unwatch: (() => void) | undefined;
  #running: Promise<void> = Promise.resolve();
  #again = false;
  #stopped = false;

  constructor(options: { store: Store; runtime: McpRuntime; logger: Logger }) {
    this.#store = options.store;
    this.#runtime = options.runtime;
    this.#logger = options.logger.child({ component: "cluster" });
  }

  /** Publishes now, on every runtime change and with each heartbeat; the embedded database serves one node, so there it does nothing. */
  start(): void {
    if (this.#store.embedded) return;
    this.#unwatch = this.#runtime.onToolsChanged(() => {
      if (this.#stopped || this.#debounce !== undefined) return;
      this.#debounce = setTimeout(() => {
        this.#debounce = undefined;
        this.publish();
      }, PUBLISH_DEBOUNCE_MS);
      this.#debounce.unref();
    });
    this.#timer = setInterval(() => this.publish(), HEARTBEAT_INTERVAL_MS);
    this.#timer.unref();
    this.publish();
  }

  /** Writes the current views (one write at a time; a request during a write runs once after it). */
  publish(): void {
    if (this.#stopped) return;
    this.#again = true;
    this.#running = this.#running.then(async () => {
      if (!this.#again || this.#stopped) return;
      this.#again = false;
      try {
        await this.#write();
      } catch (err) {
        this.#logger.warn({ err }, "could not publish this node's MCP client states");
      }
    });
  }

  async #write(): Promise<void> {
    const nodeId = this.#store.nodeId;
    const ids = this.#runtime.clientIds();
    const now = new Date();
    const rows = ids.flatMap((clientId) => {
      const view = this.#runtime.stateOf(clientId);
      if (view === undefined) return [];
      return [{
        clientId,
        nodeId,
        state: view.state,
        lastFailure: view.lastFailure ? JSON.stringify(view.lastFailure) : null,
        toolsCount: this.#runtime.toolsCount(clientId),
        updatedAt: now,
      }];
    });
    const em = this.#store.fork();
    if (rows.length > 0) await em.upsertMany(McpClientNodeStateRecord, rows);
    await em.nativeDelete(McpClientNodeStateRecord, { nodeId, clientId: { $nin: ids.length > 0 ? ids : [""] } });
  }

  /** Stops publishing and waits for a write under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#debounce);
    this.#unwatch?.();
    await this.#running;
  }
}

function parseFailure(text: string | null): LastFailureView | null {
  if (text === null) return null;
  const raw = JSON.parse(text) as { stage: FailureStageName; message: string; at: string; since: string };
  return { stage: raw.stage, message: raw.message, at: new Date(raw.at), since: new Date(raw.since) };
}

/** The live nodes' views of the given clients, by client then node; empty while this node is alone. */
export async function liveNodeViews(store: Store, cluster: NodeRegistry, clientIds: readonly string[]): Promise<Map<string, Map<string, StoredView>>> {
  const out = new Map<string, Map<string, StoredView>>();
  const live = cluster.cachedLiveNodes().map((node) => node.id);
  if (live.length < 2 || clientIds.length === 0) return out;
  const rows = await store.fork().find(McpClientNodeStateRecord, { clientId: { $in: [...clientIds] }, nodeId: { $in: live } });
  for (const row of rows) {
    const byNode = out.get(row.clientId) ?? new Map<string, StoredView>();
    byNode.set(row.nodeId, { state: row.state as ClientStateName, lastFailure: parseFailure(row.lastFailure), toolsCount: row.toolsCount, updatedAt: row.updatedAt });
    out.set(row.clientId, byNode);
  }
  return out;
}

/**
 * Adds node_states to a listed client and sets its state to degraded when the nodes disagree. This node's
 * entry is its live view (`own`), fresher than what it last published.
 */
export function withNodeStates(client: McpClient, own: RuntimeClientView, ownNodeId: string, views: Map<string, StoredView> | undefined, ownToolsCount: number): McpClient {
  if (views === undefined) return client;
  // Disabled and unverified come from the stored client, not from a connection: every node reports them alike.
  const recordDriven = own.state === "disabled" || own.state === "pending_verification";
  const merged = new Map([...views].map(([nodeId, view]) => [nodeId, recordDriven ? { ...view, state: own.state, lastFailure: null } : view] as const));
  merged.set(ownNodeId, { state: own.state, lastFailure: own.lastFailure ?? null, toolsCount: ownToolsCount, updatedAt: new Date() });
  if (merged.size < 2) return client;
  const nodeStates: Record<string, NodeState> = {};
  for (const [nodeId, view] of merged) {
    nodeStates[nodeId] = create(NodeStateSchema, {
      state: enumInputNumber(ClientStateSchema, view.state) ?? 0,
      ...(view.lastFailure ? { lastFailure: lastFailureMessage(view.lastFailure) } : {}),
      toolsCount: view.toolsCount,
      updatedAt: timestampFromDate(view.updatedAt),
    });
  }
  client.nodeStates = nodeStates;
  const states = new Set([...merged.values()].map((view) => view.state));
  if (states.size > 1 && [...states].every((state) => COMPARABLE.has(state))) {
    client.state = enumInputNumber(ClientStateSchema, "degraded") ?? client.state;
  }
  return client;
}
