/**
 * Provider keys an upstream told to wait (a 429 with retry-after): key selection skips such a key until
 * the time it named, while another key can serve. Kept in memory; a listener may share each new backoff.
 */
import type { Clock } from "./types.js";

/** One key's backoff: skip it until `untilMs` (ms since the epoch). */
export interface KeyBackoff {
  provider: string;
  keyId: string;
  untilMs: number;
}

/** The longest wait honoured, so one odd header cannot shelve a key for days. */
const MAX_BACKOFF_MS = 3_600_000;

/** This node's view of which provider keys are backing off. */
export class KeyBackoffs {
  readonly #now: Clock;
  readonly #until = new Map<string, number>();
  #onSet: ((backoff: KeyBackoff) => void) | null = null;

  constructor(now: Clock = Date.now) {
    this.#now = now;
  }

  /** Calls `listener` with every backoff this node learns from an upstream (not with ones it is told of). */
  onSet(listener: ((backoff: KeyBackoff) => void) | null): void {
    this.#onSet = listener;
  }

  /** Records that the upstream asked the key to wait `waitMs`; shares it when a listener is set. */
  backOff(provider: string, keyId: string, waitMs: number): void {
    if (!(waitMs > 0)) return;
    const backoff = { provider, keyId, untilMs: this.#now() + Math.min(waitMs, MAX_BACKOFF_MS) };
    if (this.apply(backoff)) this.#onSet?.(backoff);
  }

  /** Takes a backoff in (learnt here or from another node); false when a later one is already held. */
  apply(backoff: KeyBackoff): boolean {
    const id = `${backoff.provider}\u0000${backoff.keyId}`;
    if ((this.#until.get(id) ?? -Infinity) >= backoff.untilMs) return false;
    this.#until.set(id, backoff.untilMs);
    return true;
  }

  /** True while the key must wait. */
  waiting(provider: string, keyId: string): boolean {
    const id = `${provider}\u0000${keyId}`;
    const until = this.#until.get(id);
    if (until === undefined) return false;
    if (this.#now() < until) return true;
    this.#until.delete(id);
    return false;
  }
}
