/**
 * Session affinity: the provider and key that last served a session, so the session's next request tries
 * them first (prompt caches and upstream state stay warm). Reorders only; never adds a target or a key.
 * Entries expire 30 minutes after their last use; memory is bounded by sweeping expired entries.
 */
import type { Clock } from "./types.js";

/** How long a session remembers its route after its last request. */
export const AFFINITY_TTL_MS = 30 * 60_000;
/** Entries kept before a sweep of the expired ones. */
const SWEEP_AT = 50_000;

/** The route that last served a session. */
export interface AffinityRoute {
  provider: string;
  keyId: string;
}

/** Session id -> a value remembered until `ttlMs` after its last use; memory bounded by sweeping. */
export class SessionMemory<V> {
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(clock: Clock = Date.now, ttlMs = AFFINITY_TTL_MS) {
    this.#clock = clock;
    this.#ttlMs = ttlMs;
  }

  /** The session's value, or null when none was set within the TTL. */
  get(sessionId: string): V | null {
    const entry = this.#entries.get(sessionId);
    if (entry === undefined) return null;
    if (entry.expiresAt <= this.#clock()) {
      this.#entries.delete(sessionId);
      return null;
    }
    return entry.value;
  }

  /** Remembers the session's value now. */
  set(sessionId: string, value: V): void {
    const now = this.#clock();
    if (this.#entries.size >= SWEEP_AT && !this.#entries.has(sessionId)) {
      for (const [id, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(id);
      // Still full of live sessions: the oldest-inserted one gives way.
      if (this.#entries.size >= SWEEP_AT) {
        const oldest = this.#entries.keys().next();
        if (!oldest.done) this.#entries.delete(oldest.value);
      }
    }
    this.#entries.delete(sessionId);
    this.#entries.set(sessionId, { value, expiresAt: now + this.#ttlMs });
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
