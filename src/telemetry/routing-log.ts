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

/** A decision as recorded on the request path: its time, and the entry built only when someone reads it. */
export type RoutingLogRecord = { readonly at: number; readonly describe: () => Omit<RoutingLogEntry, "time"> };

/** Decisions kept when no size is given. */
export const DEFAULT_ROUTING_LOG_SIZE = 1000;

/** A bounded ring of routing decisions, newest last; each entry's text is built on its first read, never per request. */
export class RoutingLog {
  readonly #entries: (RoutingLogEntry | RoutingLogRecord | undefined)[];
  #next = 0;
  #count = 0;

  constructor(size = DEFAULT_ROUTING_LOG_SIZE) {
    this.#entries = new Array<RoutingLogEntry | RoutingLogRecord | undefined>(Math.max(1, Math.floor(size)));
  }

  /** Records a decision, dropping the oldest when full. */
  add(entry: RoutingLogEntry | RoutingLogRecord): void {
    this.#entries[this.#next] = entry;
    this.#next = (this.#next + 1) % this.#entries.length;
    this.#count = Math.min(this.#count + 1, this.#entries.length);
  }

  /** The kept decisions, newest first, at most `limit`. */
  recent(limit = this.#entries.length): RoutingLogEntry[] {
    const out: RoutingLogEntry[] = [];
    const size = this.#entries.length;
    for (let i = 1; i <= Math.min(limit, this.#count); i++) {
      const slot = (this.#next - i + size * 2) % size;
      const kept = this.#entries[slot];
      if (kept === undefined) continue;
      if ("describe" in kept) {
        const entry = { time: new Date(kept.at).toISOString(), ...kept.describe() };
        this.#entries[slot] = entry;
        out.push(entry);
      } else out.push(kept);
    }
    return out;
  }
}
