/**
 * Session affinity: the provider and key that last served a session, so the session's next request tries
 * them first (prompt caches and upstream state stay warm). Reorders only; never adds a target or a key.
 * Entries expire 30 minutes after they were last set; memory is bounded by dropping the least recently
 * used session beyond SESSIONS_KEPT.
 */
import type { LRUCache } from "lru-cache";
import { boundedCache } from "../bounded-cache.js";
import type { Clock } from "./types.js";

/** How long a session remembers its route after its last request. */
export const AFFINITY_TTL_MS = 30 * 60_000;
/** Sessions remembered at once. */
const SESSIONS_KEPT = 50_000;

/** The route that last served a session. */
export interface AffinityRoute {
  provider: string;
  keyId: string;
}

/** Session id -> a value remembered until `ttlMs` after it was last set; memory bounded. */
export class SessionMemory<V extends {}> {
  readonly #entries: LRUCache<string, V>;

  constructor(clock: Clock = Date.now, ttlMs = AFFINITY_TTL_MS) {
    // Expiry reads the clock at every check: lru-cache would otherwise reuse one reading for a millisecond,
    // which an injected clock that jumps outruns.
    this.#entries = boundedCache(SESSIONS_KEPT, { ttl: ttlMs, perf: { now: clock }, ttlResolution: 0 });
  }

  /** The session's value, or null when none was set within the TTL. */
  get(sessionId: string): V | null {
    return this.#entries.get(sessionId) ?? null;
  }

  /** Remembers the session's value now. */
  set(sessionId: string, value: V): void {
    this.#entries.set(sessionId, value);
  }
}

/** Session id -> the route that last served it. */
export class SessionAffinity {
  readonly #memory: SessionMemory<AffinityRoute>;

  constructor(clock: Clock = Date.now) {
    this.#memory = new SessionMemory(clock);
  }

  /** The route that last served the session, or null when none did within the TTL. */
  get(sessionId: string): AffinityRoute | null {
    return this.#memory.get(sessionId);
  }

  /** Remembers the route that served the session now. */
  remember(sessionId: string, provider: string, keyId: string): void {
    this.#memory.set(sessionId, { provider, keyId });
  }
}

/** Moves the first item `matches` accepts to the front (the rest keep their order); the same array when nothing moves. */
export function moveToFront<T>(items: readonly T[], matches: (item: T) => boolean): readonly T[] {
  const index = items.findIndex(matches);
  if (index <= 0) return items;
  return [items[index] as T, ...items.slice(0, index), ...items.slice(index + 1)];
}
