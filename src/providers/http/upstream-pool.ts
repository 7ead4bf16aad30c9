/**
 * The keep-alive connections of one adapter: an undici Agent (one pool per origin) whose connector hands
 * out sockets opened ahead of need (client.initial_pool_size) before it dials new ones, so the first
 * requests to a provider skip TCP and TLS set-up.
 */
import type { Socket } from "node:net";
import { Agent, type buildConnector } from "undici";
import { egressConnector } from "../../config/egress-connections.js";

/** The most connections kept per origin; pre-opening more would leave sockets the pool never takes. */
const MAX_CONNECTIONS_PER_ORIGIN = 256;

/** Idle sockets are kept so the hot path skips TCP and TLS set-up. */
const AGENT_OPTIONS: Agent.Options = { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: MAX_CONNECTIONS_PER_ORIGIN, pipelining: 1 };

/** A pre-open that failed: the origin and why. */
export interface PreconnectFailure {
  origin: string;
  error: unknown;
}

/** A socket opened ahead of need, with the listener that drops it if it closes while parked. */
interface Parked {
  socket: Socket;
  drop: () => void;
}

/** The key undici's connect options and a pre-opened origin share: protocol, bare hostname and port. */
function connectionKey(protocol: string, hostname: string, port: string): string {
  return `${protocol}//${hostname}:${port}`;
}

/** One adapter's agent and its parked sockets. */
export class UpstreamPool {
  readonly agent: Agent;
  readonly #parked = new Map<string, Parked[]>();
  #closing: Promise<void> | null = null;

  constructor() {
    this.agent = new Agent({ ...AGENT_OPTIONS, connect: this.#connect });
  }

  /**
   * Opens `count` connections (at most MAX_CONNECTIONS_PER_ORIGIN) to each of `origins` and parks them for
   * the agent. Resolves once every attempt has settled, with the ones that failed; never rejects.
   */
  async preconnect(origins: readonly string[], count: number): Promise<PreconnectFailure[]> {
    const perOrigin = Math.min(count, MAX_CONNECTIONS_PER_ORIGIN);
    const unique = new Map<string, URL>();
    const failures: PreconnectFailure[] = [];
    for (const origin of origins) {
      try {
        const url = new URL(origin);
        unique.set(url.origin, url);
      } catch (error) {
        failures.push({ origin, error });
      }
    }
    const attempts: Promise<void>[] = [];
    for (const [origin, url] of unique) {
      for (let i = 0; i < perOrigin; i++) attempts.push(this.#open(url).catch((error: unknown) => void failures.push({ origin, error })));
    }
    await Promise.all(attempts);
    return failures;
  }

  /** Connections opened ahead of need that no request has taken yet. */
  get idleConnections(): number {
    let count = 0;
    for (const list of this.#parked.values()) count += list.length;
    return count;
  }

  /** Closes the agent and every parked socket; closing again waits for the first close. */
  close(): Promise<void> {
    if (this.#closing === null) {
      for (const list of this.#parked.values()) for (const { socket } of list) socket.destroy();
      this.#parked.clear();
      this.#closing = this.agent.close();
    }
    return this.#closing;
  }

  /** Opens a new connection, unless the egress policy refuses its destination. */
  readonly #dial: buildConnector.connector = egressConnector;

  /** undici's connector for the agent: a parked socket to the same origin first, else a new one. */
  readonly #connect: buildConnector.connector = (options, callback) => {
    const list = this.#parked.get(connectionKey(options.protocol, options.hostname, options.port));
    if (list === undefined || list.length === 0) {
      this.#dial(options, callback);
      return;
    }
    // Called back synchronously, undici would not resume its queue: hand over on the next tick, as a dial would.
    process.nextTick(this.#handOver, list, options, callback);
  };

  /** Hands the newest parked socket still open to undici, else dials. */
  readonly #handOver = (list: Parked[], options: buildConnector.Options, callback: buildConnector.Callback): void => {
    for (let entry = list.pop(); entry !== undefined; entry = list.pop()) {
      const { socket, drop } = entry;
      socket.off("close", drop);
      socket.off("error", drop);
      socket.off("data", drop);
      if (!socket.destroyed && socket.readyState === "open") {
        // Back to paused mode for undici's 'readable' reads, and holding the process open while it works.
        socket.pause();
        socket.ref();
        callback(null, socket);
        return;
      }
      socket.destroy();
    }
    this.#dial(options, callback);
  };

  /** Opens one socket to `url` and parks it. */
  #open(url: URL): Promise<void> {
    // undici strips an IPv6 address's brackets before it connects; the key must match what it passes.
    const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    return new Promise((resolve, reject) => {
      this.#dial({ hostname, host: url.host, protocol: url.protocol, port: url.port }, (error, socket) => {
        if (error !== null) {
          reject(error);
          return;
        }
        if (this.#closing !== null) socket.destroy();
        else this.#park(connectionKey(url.protocol, hostname, url.port), socket);
        resolve();
      });
    });
  }

  /** Keeps `socket` for the agent until a request takes it or it closes. */
  #park(key: string, socket: Socket): void {
    let list = this.#parked.get(key);
    if (list === undefined) {
      list = [];
      this.#parked.set(key, list);
    }
    const parkedList = list;
    const entry: Parked = {
      socket,
      // The upstream closing an idle connection is normal: the socket just leaves the list.
      drop: () => {
        const index = parkedList.indexOf(entry);
        if (index !== -1) parkedList.splice(index, 1);
        socket.destroy();
      },
    };
    socket.on("close", entry.drop);
    socket.on("error", entry.drop);
    // Nothing may arrive before a request; whatever does (an idle-timeout 408, say) spoils the connection.
    // Reading also lets the upstream's FIN surface as 'end', so a closed socket leaves the list at once.
    socket.on("data", entry.drop);
    // A parked socket must not keep the process alive; it is ref'ed again when the agent takes it.
    socket.unref();
    list.push(entry);
  }
}
