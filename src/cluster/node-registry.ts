/**
 * This node's entry in the gateway_node table: written at start, refreshed every 5 s, deleted at a clean
 * stop. A node silent for 30 s (killed, frozen, cut off) is gone. Times are the database's clock, so nodes
 * with skewed clocks agree on who is live.
 */
import { GatewayNodeRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";

/** How often a node refreshes its heartbeat. */
export const HEARTBEAT_INTERVAL_MS = 5_000;
/** How long a node may stay silent before the others count it as gone. */
export const NODE_GONE_AFTER_S = 30;
/** Rows of nodes silent this long are deleted, with what they recorded about MCP clients. */
const PRUNE_AFTER_S = 24 * 3600;

/** A live node as the registry lists it. */
export interface LiveNode {
  id: string;
  address: string;
  version: string;
  startedAt: Date;
  heartbeatAt: Date;
}

/** Registers this node and keeps its heartbeat; answers which nodes are live. */
export class NodeRegistry {
  readonly #store: Store;
  readonly #logger: Logger;
  readonly #address: string;
  readonly #version: string;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> = Promise.resolve();
  #live: LiveNode[] = [];
  #stopped = false;

  constructor(options: { store: Store; logger: Logger; address: string; version: string }) {
    this.#store = options.store;
    this.#logger = options.logger.child({ component: "cluster" });
    this.#address = options.address;
    this.#version = options.version;
  }

  /** This node's id. */
  get nodeId(): string {
    return this.#store.nodeId;
  }

  /** Writes this node's row, then refreshes it every HEARTBEAT_INTERVAL_MS. */
  async start(): Promise<void> {
    await this.#store.fork().getConnection().execute(
      "insert into gateway_node (id, address, version, started_at, heartbeat_at) values (?, ?, ?, now(), now())",
      [this.nodeId, this.#address, this.#version],
    );
    this.#live = await this.list();
    this.#timer = setInterval(() => {
      this.#beating = this.#beat();
    }, HEARTBEAT_INTERVAL_MS);
    this.#timer.unref();
    this.#logger.info({ node_id: this.nodeId, live_nodes: this.#live.length }, "registered this gateway node");
  }

  /** The live nodes at the last heartbeat (this one included): cheap, for the request path. */
  cachedLiveNodes(): readonly LiveNode[] {
    return this.#live;
  }

  /**
   * Whether this node is the oldest live node, the one that runs cluster-wide schedules; true also before
   * this node registered when no node is live (the first node of a cluster).
   */
  async isOldest(): Promise<boolean> {
    const live = await this.list();
    return live.length === 0 || live[0]?.id === this.nodeId;
  }

  /** The live nodes now, oldest first. */
  async list(): Promise<LiveNode[]> {
    const rows = await this.#store.fork().getConnection().execute<Array<Record<string, unknown>>>(
      `select id, address, version, started_at, heartbeat_at from gateway_node where heartbeat_at > now() - interval '${NODE_GONE_AFTER_S} seconds' order by started_at, id`,
    );
    return rows.map((row) => ({
      id: String(row["id"]),
      address: String(row["address"]),
      version: String(row["version"]),
      startedAt: new Date(row["started_at"] as string | Date),
      heartbeatAt: new Date(row["heartbeat_at"] as string | Date),
    }));
  }

  async #beat(): Promise<void> {
    if (this.#stopped) return;
    try {
      const em = this.#store.fork();
      const updated = await em.getConnection().execute<Array<Record<string, unknown>>>("update gateway_node set heartbeat_at = now() where id = ? returning id", [this.nodeId]);
      if (updated.length === 0) {
        // Pruned while this node was cut off for a day: register again.
        await em.getConnection().execute(
          "insert into gateway_node (id, address, version, started_at, heartbeat_at) values (?, ?, ?, now(), now())",
          [this.nodeId, this.#address, this.#version],
        );
      }
      await em.getConnection().execute(
        `with gone as (delete from gateway_node where heartbeat_at < now() - interval '${PRUNE_AFTER_S} seconds' returning id)
         delete from mcp_client_node_state where node_id in (select id from gone)`,
      );
      this.#live = await this.list();
    } catch (err) {
      // A database hiccup costs one heartbeat; 30 s of them and the other nodes count this one as gone.
      this.#logger.warn({ err }, "could not refresh this node's heartbeat");
    }
  }

  /** Stops the heartbeat and removes this node's row, so the others stop counting it at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#beating;
    try {
      const em = this.#store.fork();
      await em.getConnection().execute("delete from mcp_client_node_state where node_id = ?", [this.nodeId]);
      await em.nativeDelete(GatewayNodeRecord, { id: this.nodeId });
    } catch (err) {
      this.#logger.warn({ err }, "could not remove this node from the node registry; it drops out after 30 s of silence");
    }
  }
}
