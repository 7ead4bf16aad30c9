/** The last pricing datasheet downloaded from pricing_url, parsed (table pricing_snapshot, one row). */
import { EntitySchema } from "@mikro-orm/core";

/** The id of the one row: a download replaces it whole. */
export const PRICING_SNAPSHOT_ID = "current";

/** A stored datasheet; `entries` holds the parsed entries, which the routing layer owns the shape of. */
export class PricingSnapshotRecord {
  declare id: string;
  /** The pricing_url it came from (without credentials it is just the URL as configured). */
  declare sourceUrl: string;
  declare entries: unknown;
  declare modelsCount: number;
  declare syncedAt: Date;
}

/** Mapping of PricingSnapshotRecord. */
export const PricingSnapshotSchema = new EntitySchema<PricingSnapshotRecord>({
  class: PricingSnapshotRecord,
  tableName: "pricing_snapshot",
  properties: {
    id: { type: "string", primary: true },
    sourceUrl: { type: "text" },
    entries: { type: "json" },
    modelsCount: { type: "integer" },
    syncedAt: { type: "datetime" },
  },
});
