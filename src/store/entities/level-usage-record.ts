/** Budget, request and token counters of one level of the governance hierarchy (table level_usage_counter). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** One window's running total, from its start (ms since the epoch). */
export interface StoredLevelWindow {
  start: number;
  used: number;
}

/** The counters of a virtual key, team, customer or business unit; written on an interval, read at start-up. */
export class LevelUsageRecord {
  declare [OptionalProps]?: "updatedAt";

  /** `<level>:<id>`, e.g. `team:team-search`. */
  declare ownerKey: string;
  declare budget: StoredLevelWindow | null;
  declare requests: StoredLevelWindow | null;
  declare tokens: StoredLevelWindow | null;
  declare updatedAt: Date;
}

/** Mapping of LevelUsageRecord. */
export const LevelUsageSchema = new EntitySchema<LevelUsageRecord>({
  class: LevelUsageRecord,
  tableName: "level_usage_counter",
  properties: {
    ownerKey: { type: "string", primary: true },
    budget: { type: "json", nullable: true },
    requests: { type: "json", nullable: true },
    tokens: { type: "json", nullable: true },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
