/**
 * The response cache's table: the durable copy behind the in-memory LRU, shared by every node on one
 * database. Entries are keyed by the direct-cache hash; semantic lookups find the nearest embedding with
 * pgvector's cosine distance over the same table, so the table itself never depends on the extension.
 */
import { GatewayError } from "../errors.js";
import type { Store } from "./store.js";
import { isUniqueViolation } from "./unique-violation.js";

/** One cached answer as the cache reads and writes it. */
export interface StoredAnswer {
  key: string;
  namespace: string;
  paramsHash: string;
  kind: "json" | "stream";
  /** The answer's JSON text (an array of events for a stream). */
  answer: string;
  embedding: readonly number[] | null;
  expiresAt: number;
}

/** A stored answer close in meaning to a question, with the cosine similarity of the two. */
export interface NearestAnswer {
  entry: StoredAnswer;
  similarity: number;
}

interface Row {
  key: string;
  namespace: string;
  params_hash: string;
  kind: string;
  answer: string;
  embedding: number[] | null;
  expires_at: Date | string;
  similarity?: number | string;
}

function entryOf(row: Row): StoredAnswer {
  return {
    key: row.key,
    namespace: row.namespace,
    paramsHash: row.params_hash,
    kind: row.kind === "stream" ? "stream" : "json",
    answer: row.answer,
    embedding: row.embedding,
    expiresAt: new Date(row.expires_at).getTime(),
  };
}

/** An embedding as a PostgreSQL array literal: the driver would spread a JS array into separate parameters. */
function arrayLiteral(embedding: readonly number[]): string {
  return `{${embedding.join(",")}}`;
}

/** Identifiers pgvector's schema may be quoted as without escaping. */
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Makes pgvector usable and returns the schema holding it, or null when the server does not have it. It
 * is created in `public` (or found wherever it already is), never in a per-run schema that may be dropped.
 */
export async function ensureVectorExtension(store: Store): Promise<string | null> {
  const conn = store.fork().getConnection();
  const find = async (): Promise<string | null> => {
    const rows: { schema: string }[] = await conn.execute(
      `select n.nspname as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'vector'`,
    );
    return rows[0]?.schema ?? null;
  };
  let schema = await find();
  if (schema === null) {
    const available: unknown[] = await conn.execute(`select 1 from pg_available_extensions where name = 'vector'`);
    if (available.length === 0) return null;
    try {
      await conn.execute(`create extension if not exists vector with schema public`);
    } catch (err) {
      // Another node (or test run) created it at the same moment.
      if (!isUniqueViolation(err)) throw err;
    }
    schema = await find();
  }
  if (schema === null) return null;
  if (!PLAIN_IDENTIFIER.test(schema)) {
    throw new GatewayError("failed_precondition", `the pgvector extension lives in schema "${schema}", whose name the gateway does not quote; move it to public`);
  }
  return schema;
}

/** The table's reads and writes; every method is off the request path or behind the LRU. */
export class ResponseCacheTable {
  constructor(private readonly store: Store) {}

  /** The live entry stored under `key`, or null. */
  async get(key: string, now: number): Promise<StoredAnswer | null> {
    const rows: Row[] = await this.store
      .fork()
      .getConnection()
      .execute(`select key, namespace, params_hash, kind, answer, embedding, expires_at from response_cache_entry where key = ? and expires_at > ?`, [key, new Date(now)]);
    const row = rows[0];
    return row === undefined ? null : entryOf(row);
  }

  /** Inserts or replaces an entry. */
  async put(entry: StoredAnswer): Promise<void> {
    await this.store
      .fork()
      .getConnection()
      .execute(
        `insert into response_cache_entry (key, namespace, params_hash, kind, answer, embedding, size_bytes, created_at, expires_at)
         values (?, ?, ?, ?, ?, ?::double precision[], ?, ?, ?)
         on conflict (key) do update set answer = excluded.answer, kind = excluded.kind, embedding = excluded.embedding,
           size_bytes = excluded.size_bytes, created_at = excluded.created_at, expires_at = excluded.expires_at`,
        [
          entry.key,
          entry.namespace,
          entry.paramsHash,
          entry.kind,
          entry.answer,
          entry.embedding === null ? null : arrayLiteral(entry.embedding),
          Buffer.byteLength(entry.answer),
          new Date(),
          new Date(entry.expiresAt),
        ],
      );
  }

  /**
   * The live entry of the namespace and parameters whose embedding is nearest (cosine) to `embedding`,
   * with its similarity; null when there is none. `vectorSchema` is where pgvector lives.
   */
  async nearest(namespace: string, paramsHash: string, embedding: readonly number[], vectorSchema: string, now: number): Promise<NearestAnswer | null> {
    const vector = `"${vectorSchema}".vector`;
    const distance = `embedding::${vector} OPERATOR("${vectorSchema}".<=>) ?::double precision[]::${vector}`;
    const rows: Row[] = await this.store
      .fork()
      .getConnection()
      .execute(
        `select key, namespace, params_hash, kind, answer, embedding, expires_at, 1 - (${distance}) as similarity
         from response_cache_entry
         where namespace = ? and params_hash = ? and expires_at > ? and embedding is not null and array_length(embedding, 1) = ?
         order by ${distance} limit 1`,
        [arrayLiteral(embedding), namespace, paramsHash, new Date(now), embedding.length, arrayLiteral(embedding)],
      );
    const row = rows[0];
    if (row === undefined) return null;
    const similarity = Number(row.similarity);
    return Number.isFinite(similarity) ? { entry: entryOf(row), similarity } : null;
  }

  /** Deletes expired entries, then the oldest beyond `maxEntries`; returns how many went. */
  async sweep(now: number, maxEntries: number): Promise<number> {
    const conn = this.store.fork().getConnection();
    const expired: unknown[] = await conn.execute(`delete from response_cache_entry where expires_at <= ? returning key`, [new Date(now)]);
    const trimmed: unknown[] = await conn.execute(
      `delete from response_cache_entry where key in (select key from response_cache_entry order by created_at desc offset ?) returning key`,
      [maxEntries],
    );
    return expired.length + trimmed.length;
  }
}
