/**
 * Turns on the budget and rate-limit counters every node shares, when the gateway runs on a database
 * server (the embedded database serves one node, whose own counters hold). The node leases slices of them
 * from the shared_counter table and gives back what it did not spend when it stops.
 */
import type { NodeRegistry } from "../../cluster/node-registry.js";
import { SharedLedger } from "../../routing/shared-ledger.js";
import { SharedCounterTable, type Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import type { InferenceState } from "./state.js";

/** Shares the hierarchy's counters through the database; null on the embedded database. */
export function startSharedLimits(options: { store: Store; registry: NodeRegistry; inference: InferenceState; logger: Logger }): SharedLedger | null {
  const { store, registry, inference, logger } = options;
  if (store.embedded) return null;
  const ledger = new SharedLedger({
    backend: new SharedCounterTable(store),
    liveNodes: () => Math.max(1, registry.cachedLiveNodes().length),
    warn: (err, message) => logger.warn({ err }, message),
  });
  inference.gate.share(ledger);
  return ledger;
}
