/** One business unit, customer or team (table governance_group). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** A level of the governance hierarchy above virtual keys. */
export class GovernanceGroupRecord {
  declare [OptionalProps]?: "parentId" | "budget" | "rateLimit" | "source" | "createdAt" | "updatedAt";

  declare id: string;
  declare kind: "business_unit" | "customer" | "team";
  declare name: string;
  /** A team's customer_id, a customer's business_unit_id; "" for none. */
  declare parentId: string;
  /** Wire JSON of budget, or null. */
  declare budget: Record<string, unknown> | null;
  /** Wire JSON of rate_limit, or null. */
  declare rateLimit: Record<string, unknown> | null;
  declare source: "api" | "config";
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of GovernanceGroupRecord; ids are unique across kinds, names within a kind. */
export const GovernanceGroupSchema = new EntitySchema<GovernanceGroupRecord>({
  class: GovernanceGroupRecord,
  tableName: "governance_group",
  uniques: [{ name: "governance_group_kind_name_unique", properties: ["kind", "name"] }],
  properties: {
    id: { type: "string", primary: true },
    kind: { enum: true, items: ["business_unit", "customer", "team"] },
    name: { type: "string" },
    parentId: { type: "string", onCreate: () => "" },
    budget: { type: "json", nullable: true },
    rateLimit: { type: "json", nullable: true },
    source: { enum: true, items: ["api", "config"], onCreate: () => "api" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
