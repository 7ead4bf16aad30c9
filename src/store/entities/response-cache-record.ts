/** One cached answer of the response cache (table response_cache_entry). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** A cached answer: written off the request path, read through the in-memory LRU in front of it. */
export class ResponseCacheRecord {
  declare [OptionalProps]?: "embedding" | "createdAt";

  /** Hash of (namespace, method, provider, model, normalised body): the direct lookup. */
  declare key: string;
  /** The virtual key's namespace ("" without a key): entries never cross keys. */
  declare namespace: string;
  /** Hash of everything but the last user message: a semantic hit must match it exactly. */
  declare paramsHash: string;
  /** "json" (one answer) or "stream" (its events in order). */
  declare kind: string;
  /** The answer's JSON text (an array of events for a stream). */
  declare answer: string;
  /** The last user message's embedding; null for direct-only entries. */
  declare embedding: number[] | null;
  declare sizeBytes: number;
  declare createdAt: Date;
  declare expiresAt: Date;
}

/** Mapping of ResponseCacheRecord. */
export const ResponseCacheSchema = new EntitySchema<ResponseCacheRecord>({
  class: ResponseCacheRecord,
  tableName: "response_cache_entry",
  properties: {
    key: { type: "string", primary: true },
    namespace: { type: "string" },
    paramsHash: { type: "string" },
    kind: { type: "string" },
    answer: { type: "text" },
    embedding: { type: "double[]", nullable: true },
    sizeBytes: { type: "integer" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    expiresAt: { type: "datetime", index: true },
  },
  indexes: [{ properties: ["namespace", "paramsHash"] }],
});
