/** One node's request totals over one minute, kept for the usage history (table usage_minute). */
import { EntitySchema } from "@mikro-orm/core";

/** Requests, tokens and spend of one key, model or tool within a minute. */
export interface StoredTally {
  requests: number;
  tokens: number;
  costUsd: number;
}

/** A minute's totals; written on the usage flush interval, swept after the retention period. */
export class UsageMinuteRecord {
  /** The process that counted them: each node writes its own rows, readers add them up. */
  declare nodeId: string;
  /** The minute's start. */
  declare minute: Date;
  declare requests: number;
  declare errors: number;
  declare inputTokens: number;
  declare outputTokens: number;
  declare costUsd: number;
  /** Counts per latency bucket, in the order of the fixed bounds the counting code defines. */
  declare latency: number[];
  /** By virtual key name, by provider/model and by tool name; each capped to its busiest entries. */
  declare keys: Record<string, StoredTally>;
  declare models: Record<string, StoredTally>;
  declare tools: Record<string, StoredTally>;
}

/** Mapping of UsageMinuteRecord. */
export const UsageMinuteSchema = new EntitySchema<UsageMinuteRecord>({
  class: UsageMinuteRecord,
  tableName: "usage_minute",
  indexes: [{ properties: ["minute"] }],
  properties: {
    nodeId: { type: "string", primary: true },
    minute: { type: "datetime", primary: true },
    requests: { type: "integer" },
    errors: { type: "integer" },
    inputTokens: { type: "double" },
    outputTokens: { type: "double" },
    costUsd: { type: "double" },
    latency: { type: "json" },
    keys: { type: "json" },
    models: { type: "json" },
    tools: { type: "json" },
  },
});
