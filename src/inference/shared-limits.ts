/**
 * Turns on the budget and rate-limit counters every node shares, when the gateway runs on a database
 * server (the embedded database serves one node, whose own counters hold). The node leases slices of them
 * from the shared_counter table, or from Redis when one is configured (the table stands in while Redis does
 * not answer), and gives back what it did not spend when it stops. Provider key backoffs (429 with
 * retry-after) are shared through the database the same way configuration changes are.
 */
import { FallbackCounters } from "../cluster/fallback-counters.js";
import type { NodeRegistry } from "../cluster/node-registry.js";
import { RedisCounters } from "../cluster/redis-counters.js";
import type { KeyBackoff } from "../routing/key-backoffs.js";
import { SharedLedger } from "../routing/shared-ledger.js";
import { KeyBackoffTable, SharedCounterTable, type CounterBackend, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import type { InferenceState } from "./state.js";

/** How often at most a Redis outage is logged. */
const WARN_EVERY_MS = 10_000;

/** The running shared counters. */
export interface SharedLimits {
  /** Gives the unspent slices back and closes Redis. */
  stop(): Promise<void>;
}

/** Shares the hierarchy's counters through the database or Redis; null on the embedded database. */
export function startSharedLimits(options: {
  store: Store;
  registry: NodeRegistry;
  inference: InferenceState;
  logger: Logger;
  redis?: { url: string; keyPrefix: string } | undefined;
  /** The clock the windows follow (the inference clock; tests inject one). */
  clock?: () => number;
  /** Tells the other nodes of a backoff at once, before its row is stored. */
  announceBackoff?: (backoff: KeyBackoff) => void;
}): SharedLimits | null {
  const { store, registry, inference, logger } = options;
  if (store.embedded) {
    if (options.redis) logger.warn("redis is configured but the embedded database serves a single node, whose own counters hold; Redis is not used");
    return null;
  }
  const table = new SharedCounterTable(store);
  let lastWarn = -Infinity;
  const redisDown = (err: unknown): void => {
    const now = Date.now();
    if (now - lastWarn < WARN_EVERY_MS) return;
    lastWarn = now;
    logger.warn({ err }, "Redis does not answer; the shared budget and rate-limit counters use the database until it does");
  };
  const redis = options.redis ? new RedisCounters({ url: options.redis.url, keyPrefix: options.redis.keyPrefix, onError: redisDown }) : null;
  const backend: CounterBackend = redis === null ? table : new FallbackCounters(redis, table, redisDown);
  const ledger = new SharedLedger({
    backend,
    liveNodes: () => Math.max(1, registry.cachedLiveNodes().length),
    ...(options.clock ? { clock: options.clock } : {}),
    warn: (err, message) => logger.warn({ err }, message),
  });
  inference.gate.share(ledger);
  // A key an upstream told to wait is skipped on every node: the row notifies the others (cluster-sync).
  const backoffs = new KeyBackoffTable(store);
  // Backoffs other nodes learnt before this one started; not awaited, so start-up never waits for it.
  backoffs
    .active(Date.now())
    .then((running) => running.forEach((backoff) => inference.keyBackoffs.apply(backoff)))
    .catch((err: unknown) => logger.warn({ err }, "could not read the provider key backoffs other nodes stored; this node learns new ones as they come"));
  inference.keyBackoffs.onSet((backoff) => {
    options.announceBackoff?.(backoff);
    backoffs.publish(backoff).catch((err: unknown) => logger.warn({ err, provider: backoff.provider, key_id: backoff.keyId }, "could not share a provider key's retry-after with the other nodes"));
  });
  logger.info({ backend: redis === null ? "database" : "redis" }, "budgets and rate limits are shared by every node");
  return {
    async stop() {
      inference.keyBackoffs.onSet(null);
      await ledger.returnSlices();
      await redis?.close();
    },
  };
}
