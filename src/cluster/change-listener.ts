/**
 * Hears the configuration changes other nodes commit: database triggers send `{entity, id, op, origin}` on
 * a channel named after the schema (so gateways on other schemas of the same database stay apart), and
 * this node's own changes, which it applied already, are skipped by their origin. A node may also announce
 * a change itself, on the same channel, carrying what the others need to apply it as it arrives. A lost
 * connection is dialled again; since notifications sent meanwhile are gone, the node then reloads everything.
 */
import { createHash } from "node:crypto";
import { applicationNameOf, openRawConnection, type PgNotification, type RawConnection, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";

/** One committed change to a configuration row. */
export interface ConfigChange {
  /** The table: mcp_client, provider, virtual_key, routing_rule, governance_group, guardrail, virtual_mcp_server, setting, mcp_user_credential, pricing_snapshot, sso_session, admin_session or provider_key_backoff. */
  entity: string;
  /** The row's key (a provider's name, a setting's key, otherwise its id). */
  id: string;
  op: "insert" | "update" | "delete";
}

/** What the listener calls; each call of `change` and `resync` finishes before the next starts. */
export interface ChangeHandlers {
  change(change: ConfigChange): Promise<void>;
  /** After a reconnect: notifications may have been missed, so everything is loaded again. */
  resync(): Promise<void>;
  /**
   * Takes a change in as its notification arrives, without waiting for the changes queued before it (a
   * reload may take seconds); true when it is fully applied so, false to queue it for `change`. For what a
   * late application would let through (a logout, an upstream's rate limit), and only when applying it
   * in any order is safe. `payload` is the whole notification, with what `announce` added.
   */
  onReceipt?(change: ConfigChange, payload: Readonly<Record<string, unknown>>): boolean;
}

const RECONNECT_DELAY_MS = 500;
const MAX_RECONNECT_DELAY_MS = 5_000;

/** The notification channel of a schema, as the triggers of the cluster migration name it. */
export function changeChannel(schema: string): string {
  return `gw_config_${createHash("md5").update(schema).digest("hex").slice(0, 16)}`;
}

/** The application_name of a node's listen connection (visible in pg_stat_activity). */
export function listenerApplicationName(nodeId: string): string {
  return `gw-listen:${nodeId}`;
}

/** Keeps one LISTEN connection open and hands every other node's change to the handlers, in order. */
export class ChangeListener {
  readonly #store: Store;
  readonly #logger: Logger;
  readonly #handlers: ChangeHandlers;
  readonly #channel: string;
  readonly #ownOrigin: string;
  #conn: RawConnection | undefined;
  #queue: Promise<void> = Promise.resolve();
  #retry: NodeJS.Timeout | undefined;
  #delay = RECONNECT_DELAY_MS;
  #stopped = false;

  constructor(options: { store: Store; logger: Logger; handlers: ChangeHandlers }) {
    this.#store = options.store;
    this.#logger = options.logger.child({ component: "cluster" });
    this.#handlers = options.handlers;
    this.#channel = changeChannel(options.store.schema);
    this.#ownOrigin = applicationNameOf(options.store.nodeId);
  }

  /** Opens the listen connection; the embedded database serves one node only, so there it does nothing. */
  async start(): Promise<void> {
    if (this.#store.embedded) return;
    await this.#connect(false);
  }

  async #connect(afterLoss: boolean): Promise<void> {
    const conn = await openRawConnection(this.#store.orm, listenerApplicationName(this.#store.nodeId));
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      if (this.#conn === conn) this.#conn = undefined;
      if (this.#stopped) return;
      this.#logger.warn({ err }, "lost the connection that hears other nodes' configuration changes; reconnecting");
      this.#scheduleReconnect();
    };
    conn.on("error", (err) => onLost(err));
    conn.on("end", () => onLost());
    conn.on("notification", (message) => this.#onNotification(message));
    await conn.query(`listen "${this.#channel}"`);
    if (this.#stopped) {
      await conn.end().catch(() => undefined);
      return;
    }
    this.#conn = conn;
    this.#delay = RECONNECT_DELAY_MS;
    if (afterLoss) {
      this.#logger.info("listening for configuration changes again; reloading everything that may have changed meanwhile");
      this.#enqueue(() => this.#handlers.resync());
    }
  }

  #scheduleReconnect(): void {
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      this.#connect(true).catch((err: unknown) => {
        this.#logger.warn({ err, retry_in_ms: this.#delay }, "cannot listen for configuration changes yet");
        this.#delay = Math.min(this.#delay * 2, MAX_RECONNECT_DELAY_MS);
        if (!this.#stopped) this.#scheduleReconnect();
      });
    }, this.#delay);
    this.#retry.unref();
  }

  /**
   * Tells the other nodes of a change at once, over the listen connection (never waiting for a pooled
   * one), with `data` for their `onReceipt`. Best effort: nothing is sent while the connection is down, so
   * what must arrive is also written to a table whose trigger notifies.
   */
  announce(change: ConfigChange, data: Readonly<Record<string, unknown>>): void {
    const conn = this.#conn;
    if (conn === undefined) return;
    const payload = JSON.stringify({ ...data, ...change, origin: this.#ownOrigin });
    conn.query("select pg_notify($1, $2)", [this.#channel, payload]).catch((err: unknown) => {
      this.#logger.warn({ err, entity: change.entity }, "could not announce a change to the other nodes; they take it from the store");
    });
  }

  #onNotification(message: PgNotification): void {
    if (message.channel !== this.#channel || message.payload === undefined) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(message.payload);
    } catch {
      parsed = undefined;
    }
    if (parsed === null || typeof parsed !== "object") {
      this.#logger.warn({ payload: message.payload }, "ignored a configuration notification that is not a JSON object");
      return;
    }
    const payload = parsed as Record<string, unknown>;
    if (payload["origin"] === this.#ownOrigin) return;
    const { entity, id, op } = payload;
    if (typeof entity !== "string" || typeof id !== "string" || (op !== "insert" && op !== "update" && op !== "delete")) {
      this.#logger.warn({ payload: message.payload }, "ignored a configuration notification without entity, id and op");
      return;
    }
    const change: ConfigChange = { entity, id, op };
    try {
      if (this.#handlers.onReceipt?.(change, payload) === true) return;
    } catch (err) {
      this.#logger.warn({ err, entity }, "could not apply another node's change on receipt; applying it in turn");
    }
    this.#enqueue(() => this.#handlers.change(change));
  }

  #enqueue(work: () => Promise<void>): void {
    this.#queue = this.#queue.then(work).catch((err: unknown) => {
      this.#logger.error({ err }, "could not apply another node's configuration change; it applies at the next change or restart");
    });
  }

  /** Closes the listen connection and waits for the change being applied. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    await this.#conn?.end().catch(() => undefined);
    await this.#queue;
  }
}
