/**
 * The response cache: answers a request the way an identical (direct) or close enough (semantic) earlier
 * request was answered. An in-memory LRU sits in front of the database table, so a repeated request is
 * answered from memory; the table makes entries outlive restarts and reach every node, and is read only
 * when memory misses. Writes never hold up an answer: they go to memory at once and to the table in the
 * background. A sweep removes expired entries and keeps the table bounded.
 */
import { LRUCache } from "lru-cache";
import type { RequestAbort } from "../cancellation.js";
import type { JsonObject } from "../providers/types.js";
import type { CacheMode, VirtualKey } from "../routing/types.js";
import type { ResponseCacheTable, StoredAnswer } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { DEFAULT_CACHE_THRESHOLD, DEFAULT_CACHE_TTL, cacheTtlMs, type CacheRequestHeaders } from "./cache-settings-wire.js";
import { directCacheKey, semanticParts, type CacheKeyInput } from "./cache-key.js";

/** Embeds one text for semantic lookups. */
export interface Embedder {
  /** False while there is no model to embed with (semantic caching is then unavailable). */
  available(): boolean;
  embed(text: string, signal: RequestAbort | AbortSignal): Promise<number[]>;
}

/** Why no question can be embedded: neither cache.embedding nor a default embedding model. */
export const NO_EMBEDDING_MODEL =
  "semantic caching needs an embedding model: set cache.embedding {provider, model} in the config file, or configure a provider with a key that serves an embedding model of the catalog (such as openai's text-embedding-3-small)";

/** How a request came out of the cache, as the `x-gw-cache` response header says it. */
export type CacheStatus = "hit-direct" | "hit-semantic" | "miss";

/** The bounds of the cache. */
export interface ResponseCacheLimits {
  /** Entries kept in memory. */
  memoryEntries: number;
  /** Bytes of answers kept in memory. */
  memoryBytes: number;
  /** Entries kept in the table; the sweep drops the oldest beyond it. */
  storedEntries: number;
  /** An answer larger than this is not cached. */
  entryBytes: number;
  /** How often expired entries are swept from the table. */
  sweepIntervalMs: number;
}

/** Defaults sized for a gateway process: tens of MiB of memory at most. */
export const DEFAULT_CACHE_LIMITS: ResponseCacheLimits = {
  memoryEntries: 10_000,
  memoryBytes: 64 * 1024 * 1024,
  storedEntries: 100_000,
  entryBytes: 1024 * 1024,
  sweepIntervalMs: 60_000,
};

/** The TTL of a plan that names none, parsed once. */
const DEFAULT_TTL_MS = cacheTtlMs(DEFAULT_CACHE_TTL, "ttl");

/** Direct keys remembered per request text: a repeated request skips sorting and hashing its body again. */
const KEY_MEMO_ENTRIES = 4096;
const KEY_MEMO_BYTES = 8 * 1024 * 1024;

/** Table writes waiting at once beyond this are dropped: memory still holds the answer. */
const MAX_PENDING_WRITES = 256;

/** A request text's direct key, and the namespace, API and target it was computed for. */
interface KeyMemo {
  namespace: string;
  method: string;
  provider: string;
  model: string;
  key: string;
  bytes: number;
}

/** What the cache will do for one request. */
export interface CachePlan {
  mode: Exclude<CacheMode, "off">;
  ttlMs: number;
  threshold: number;
  namespace: string;
  key: string;
  stream: boolean;
  /** The semantic question and the hash of the rest; null for direct plans or requests with no user text. */
  semantic: { question: string; paramsHash: string } | null;
  /** The question's embedding once a semantic lookup computed it; stored with the answer. */
  embedding: number[] | null;
}

/** An answer from the cache: one JSON body or the events of a stream. */
export type CachedAnswer = { kind: "json"; body: JsonObject; raw: string } | { kind: "stream"; events: readonly JsonObject[] };

/** A hit and where it came from. */
export interface CacheHit {
  status: Exclude<CacheStatus, "miss">;
  answer: CachedAnswer;
}

interface MemoryEntry {
  answer: CachedAnswer;
  bytes: number;
  expiresAt: number;
}

/** What the cache needs. */
export interface ResponseCacheDeps {
  table: ResponseCacheTable;
  logger: Logger;
  clock: () => number;
  /** Embeds questions; null (or not available) when there is no embedding model (semantic caching is then unavailable). */
  embedder: Embedder | null;
  /** pgvector's schema; null when the database has no pgvector (semantic caching is then unavailable). */
  vectorSchema: string | null;
  limits?: Partial<ResponseCacheLimits>;
}

/** Why semantic caching cannot run here, or null when it can. */
export function semanticUnavailable(deps: { embedder: Embedder | null; vectorSchema: string | null }): string | null {
  if (deps.embedder === null || !deps.embedder.available()) return NO_EMBEDDING_MODEL;
  if (deps.vectorSchema === null) return "semantic caching needs the pgvector extension in the database (CREATE EXTENSION vector)";
  return null;
}

function answerOf(stored: StoredAnswer): CachedAnswer | null {
  try {
    const parsed: unknown = JSON.parse(stored.answer);
    if (stored.kind === "stream") return Array.isArray(parsed) ? { kind: "stream", events: parsed as JsonObject[] } : null;
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? { kind: "json", body: parsed as JsonObject, raw: stored.answer } : null;
  } catch {
    return null;
  }
}

/** The response cache of one gateway process. */
export class ResponseCache {
  readonly #memory: LRUCache<string, MemoryEntry>;
  // Keyed by the request text itself: a fresh string per request is hashed once, where a longer key built
  // around it would first be copied whole.
  readonly #keys = new LRUCache<string, KeyMemo>({ max: KEY_MEMO_ENTRIES, maxSize: KEY_MEMO_BYTES, sizeCalculation: (entry) => entry.bytes });
  readonly #limits: ResponseCacheLimits;
  readonly #pending = new Set<Promise<void>>();
  #sweeper: NodeJS.Timeout | undefined;
  #warnedEmbedding = false;

  constructor(private readonly deps: ResponseCacheDeps) {
    this.#limits = { ...DEFAULT_CACHE_LIMITS, ...deps.limits };
    // lru-cache takes only sizes of 1 and more; an answer over memoryBytes alone is not kept.
    this.#memory = new LRUCache({ max: this.#limits.memoryEntries, maxSize: this.#limits.memoryBytes, sizeCalculation: (entry) => Math.max(1, entry.bytes) });
  }

  /** Why semantic caching cannot run here, or null when it can. */
  get semanticProblem(): string | null {
    return semanticUnavailable(this.deps);
  }

  /**
   * What the cache does for a request: null when caching is off for it. `headers` override the key's
   * settings; a semantic request this gateway cannot serve semantically is refused by the caller beforehand.
   */
  plan(input: Omit<CacheKeyInput, "namespace">, virtualKey: VirtualKey | null, headers: CacheRequestHeaders, text?: string): CachePlan | null {
    const settings = virtualKey?.cache;
    const mode = headers.mode ?? settings?.mode ?? "off";
    if (mode === "off") return null;
    const namespace = virtualKey?.id ?? "";
    // A plain literal: spreading `input` first sent V8 down its slow property definition on every lookup.
    const keyInput: CacheKeyInput = { namespace, method: input.method, provider: input.provider, model: input.model, body: input.body };
    return {
      mode,
      ttlMs: headers.ttlMs ?? settings?.ttlMs ?? DEFAULT_TTL_MS,
      threshold: settings?.threshold ?? DEFAULT_CACHE_THRESHOLD,
      namespace,
      key: this.#directKey(keyInput, text),
      stream: input.body["stream"] === true,
      semantic: mode === "semantic" ? semanticParts(keyInput) : null,
      embedding: null,
    };
  }

  /** The direct key of a request; `text`, the body as sent, finds the key of a request seen before. */
  #directKey(input: CacheKeyInput, text: string | undefined): string {
    if (text === undefined || text === "") return directCacheKey(input);
    // The same text with the same namespace, API and target always normalises to the same key; the four
    // are compared apart, since joining them into one string per request cost more than the comparisons.
    const known = this.#keys.get(text);
    if (known !== undefined && known.namespace === input.namespace && known.method === input.method && known.provider === input.provider && known.model === input.model) return known.key;
    const key = directCacheKey(input);
    const { namespace, method, provider, model } = input;
    this.#keys.set(text, { namespace, method, provider, model, key, bytes: (text.length + namespace.length + method.length + provider.length + model.length + key.length) * 2 });
    return key;
  }

  /** The answer memory holds for a plan, or null: no database, no waiting. */
  recall(plan: CachePlan): CacheHit | null {
    const memory = this.#memory.get(plan.key);
    if (memory === undefined) return null;
    if (memory.expiresAt > this.deps.clock()) return { status: "hit-direct", answer: memory.answer };
    this.#memory.delete(plan.key);
    return null;
  }

  /**
   * The cached answer for a plan, or null: memory first, then the table (direct, then semantic). A
   * database that fails makes a miss, never a failed request.
   */
  async lookup(plan: CachePlan, signal: RequestAbort | AbortSignal): Promise<CacheHit | null> {
    const remembered = this.recall(plan);
    if (remembered !== null) return remembered;
    try {
      return await this.#lookupStored(plan, signal, this.deps.clock());
    } catch (err) {
      this.deps.logger.warn({ err }, "could not read cached answers from the database; the request goes upstream");
      return null;
    }
  }

  async #lookupStored(plan: CachePlan, signal: RequestAbort | AbortSignal, now: number): Promise<CacheHit | null> {
    const stored = await this.deps.table.get(plan.key, now);
    const direct = stored === null ? null : answerOf(stored);
    if (stored !== null && direct !== null) {
      this.#remember(plan.key, direct, stored.expiresAt);
      return { status: "hit-direct", answer: direct };
    }
    if (plan.semantic === null || this.deps.embedder === null || !this.deps.embedder.available() || this.deps.vectorSchema === null) return null;
    const embedding = await this.#embed(plan.semantic.question, signal);
    if (embedding === null) return null;
    plan.embedding = embedding;
    const nearest = await this.deps.table.nearest(plan.namespace, plan.semantic.paramsHash, embedding, this.deps.vectorSchema, now);
    if (nearest === null || nearest.similarity < plan.threshold) return null;
    const answer = answerOf(nearest.entry);
    // A streaming request is answered by a stream, a plain one by JSON: the kinds must match.
    if (answer === null || (answer.kind === "stream") !== plan.stream) return null;
    return { status: "hit-semantic", answer };
  }

  /** Caches an answer: in memory now, in the table in the background. */
  store(plan: CachePlan, answer: CachedAnswer): void {
    const text = answer.kind === "json" ? answer.raw : JSON.stringify(answer.events);
    const bytes = Buffer.byteLength(text);
    if (bytes > this.#limits.entryBytes) return;
    const expiresAt = this.deps.clock() + plan.ttlMs;
    this.#remember(plan.key, answer, expiresAt);
    if (this.#pending.size >= MAX_PENDING_WRITES) return;
    const entry: StoredAnswer = {
      key: plan.key,
      namespace: plan.namespace,
      paramsHash: plan.semantic?.paramsHash ?? "",
      kind: answer.kind,
      answer: text,
      embedding: plan.embedding,
      expiresAt,
    };
    const write = this.deps.table.put(entry).catch((err: unknown) => {
      this.deps.logger.warn({ err }, "could not store a cached answer in the database; this node still serves it from memory");
    });
    this.#pending.add(write);
    void write.finally(() => this.#pending.delete(write));
  }

  /** Starts the periodic sweep (one right away). */
  start(): void {
    void this.sweep();
    this.#sweeper = setInterval(() => void this.sweep(), this.#limits.sweepIntervalMs);
    this.#sweeper.unref();
  }

  /** Drops expired entries from memory and the table, and trims the table to its bound. */
  async sweep(): Promise<void> {
    const now = this.deps.clock();
    this.#memory.forEach((entry, key) => {
      if (entry.expiresAt <= now) this.#memory.delete(key);
    });
    try {
      await this.deps.table.sweep(now, this.#limits.storedEntries);
    } catch (err) {
      this.deps.logger.warn({ err }, "could not sweep expired cached answers; the next sweep tries again");
    }
  }

  /** Stops the sweep and waits for the writes under way. */
  async close(): Promise<void> {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    await Promise.all([...this.#pending]);
  }

  #remember(key: string, answer: CachedAnswer, expiresAt: number): void {
    const bytes = answer.kind === "json" ? Buffer.byteLength(answer.raw) : JSON.stringify(answer.events).length;
    this.#memory.set(key, { answer, bytes, expiresAt });
  }

  async #embed(question: string, signal: RequestAbort | AbortSignal): Promise<number[] | null> {
    try {
      return await (this.deps.embedder as Embedder).embed(question, signal);
    } catch (err) {
      // The embeddings upstream failing costs the request its semantic lookup, not its answer.
      if (!this.#warnedEmbedding) this.deps.logger.warn({ err }, "could not embed a question for the semantic cache; such requests skip the semantic lookup");
      this.#warnedEmbedding = true;
      return null;
    }
  }
}
