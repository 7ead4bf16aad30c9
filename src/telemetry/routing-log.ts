/**
 * The last routing decisions in memory: a fixed-size ring, so reading recent decisions costs nothing on
 * the request path and memory stays bounded however busy the gateway is.
 */

/** One routing decision. */
export interface RoutingLogEntry {
  /** RFC 3339 time of the decision. */
  time: string;
  /** The routing engines that decided, in order (the routing_engine_used label). */
  engines: string[];
  /** The model as the request named it. */
  requestedModel: string;
  provider: string;
  model: string;
  /** "" when no routing rule matched. */
  routingRuleId: string;
  routingRuleName: string;
  /** `provider/model` entries tried after the primary. */
  fallbacks: string[];
  virtualKeyId: string;
  /** One sentence saying what decided and why. */
  message: string;
}

/**
 * A decision as recorded on the request path: its entry, built only when someone reads it. Requests that
 * decided alike may share one record, so the ring need not keep an object of every request.
 */
export interface RoutingLogRecord {
  describe(): Omit<RoutingLogEntry, "time">;
}

/** Decisions kept when no size is given. */
export const DEFAULT_ROUTING_LOG_SIZE = 1000;

/**
 * A bounded ring of routing decisions, newest last; each record's entry is built on its first read, never per
 * request. The times sit in a typed array, so recording a decision allocates nothing: an object per request
 * kept for the ring's thousand requests would outlive V8's young-generation collections and be copied into
 * the old generation, to die there a moment later.
 */
export class RoutingLog {
  readonly #records: (RoutingLogRecord | undefined)[];
  readonly #times: Float64Array;
  readonly #described = new WeakMap<RoutingLogRecord, Omit<RoutingLogEntry, "time">>();
  #next = 0;
  #count = 0;

  constructor(size = DEFAULT_ROUTING_LOG_SIZE) {
    const slots = Math.max(1, Math.floor(size));
    this.#records = new Array<RoutingLogRecord | undefined>(slots).fill(undefined);
    this.#times = new Float64Array(slots);
  }

  /** Records a decision made at `at` (ms since the epoch), dropping the oldest when full. */
  add(at: number, record: RoutingLogRecord): void {
    this.#records[this.#next] = record;
    this.#times[this.#next] = at;
    this.#next = (this.#next + 1) % this.#records.length;
    this.#count = Math.min(this.#count + 1, this.#records.length);
  }

  /** The kept decisions, newest first, at most `limit`. */
  recent(limit = this.#records.length): RoutingLogEntry[] {
    const out: RoutingLogEntry[] = [];
    const size = this.#records.length;
    for (let i = 1; i <= Math.min(limit, this.#count); i++) {
      const slot = (this.#next - i + size * 2) % size;
      const record = this.#records[slot];
      if (record === undefined) continue;
      let described = this.#described.get(record);
      if (described === undefined) {
        described = record.describe();
        this.#described.set(record, described);
      }
      out.push({ time: new Date(this.#times[slot] ?? 0).toISOString(), ...described });
    }
    return out;
  }
}
