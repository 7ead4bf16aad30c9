/** Budget and token counters of one provider config of one virtual key (table usage_counter). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** One window's running total, as routing's usage tracker keeps it. */
export interface StoredWindow {
  windowStartMs: number;
  used: number;
}

/** The counters; written asynchronously on an interval, read once at start-up. */
export class UsageRecord {
  declare [OptionalProps]?: "updatedAt";

  declare virtualKeyId: string;
  declare provider: string;
  /** One entry per budget of the provider config, in order; null before the first request. */
  declare budgets: (StoredWindow | null)[];
  declare tokens: StoredWindow | null;
  declare updatedAt: Date;
}

/** Mapping of UsageRecord. */
export const UsageSchema = new EntitySchema<UsageRecord>({
  class: UsageRecord,
  tableName: "usage_counter",
  properties: {
    virtualKeyId: { type: "string", primary: true },
    provider: { type: "string", primary: true },
    budgets: { type: "json" },
    tokens: { type: "json", nullable: true },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
