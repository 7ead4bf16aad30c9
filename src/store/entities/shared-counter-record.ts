/** A budget or rate-limit counter every node of a cluster spends from (table shared_counter). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** One counter's current window and what the nodes have leased from it. */
export class SharedCounterRecord {
  declare [OptionalProps]?: "updatedAt";

  /** `<level>:<id>:<budget|requests|tokens>`, e.g. `virtual_key:vk-a:requests`. */
  declare counterKey: string;
  /** The current window's start and end, in ms since the epoch. */
  declare windowStart: string;
  declare windowEnd: string;
  /** What the nodes have leased in this window (requests, tokens or USD). */
  declare used: number;
  /** The amount the last lease granted, read back by the leasing statement. */
  declare lastGrant: number;
  declare updatedAt: Date;
}

/** Mapping of SharedCounterRecord. */
export const SharedCounterSchema = new EntitySchema<SharedCounterRecord>({
  class: SharedCounterRecord,
  tableName: "shared_counter",
  properties: {
    counterKey: { type: "string", primary: true },
    windowStart: { type: "bigint" },
    windowEnd: { type: "bigint" },
    used: { type: "double" },
    lastGrant: { type: "double" },
    updatedAt: { type: "datetime", defaultRaw: "now()" },
  },
});
