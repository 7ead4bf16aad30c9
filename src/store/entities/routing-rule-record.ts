/** One routing rule (table routing_rule). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** A rule fallback as the API gave it: "provider/model", "provider/", or an object that may pin a key. */
export type StoredFallback = string | { provider: string; model?: string; key_id?: string };

/** A routing rule as stored: its expression is compiled again when loaded. */
export class RoutingRuleRecord {
  declare [OptionalProps]?: "description" | "enabled" | "priority" | "scopeId" | "celExpression" | "fallbacks" | "chainRule" | "source" | "createdAt" | "updatedAt";

  declare id: string;
  declare name: string;
  declare description: string;
  declare enabled: boolean;
  declare priority: number;
  /** global, customer, team or virtual_key. */
  declare scope: string;
  /** "" for global. */
  declare scopeId: string;
  declare celExpression: string;
  /** Wire JSON (snake_case) of targets: [{provider, model, key_id, weight}]. */
  declare targets: Record<string, unknown>[];
  /** Wire JSON of the fallbacks, strings and objects as given. */
  declare fallbacks: StoredFallback[];
  declare chainRule: boolean;
  declare source: "api" | "config";
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of RoutingRuleRecord; a name is unique within its scope. */
export const RoutingRuleSchema = new EntitySchema<RoutingRuleRecord>({
  class: RoutingRuleRecord,
  tableName: "routing_rule",
  uniques: [{ name: "routing_rule_scope_name_unique", properties: ["scope", "scopeId", "name"] }],
  properties: {
    id: { type: "string", primary: true },
    name: { type: "string" },
    description: { type: "text", onCreate: () => "" },
    enabled: { type: "boolean", onCreate: () => true },
    priority: { type: "integer", onCreate: () => 0 },
    scope: { type: "string" },
    scopeId: { type: "string", onCreate: () => "" },
    celExpression: { type: "text", onCreate: () => "" },
    targets: { type: "json" },
    fallbacks: { type: "json", onCreate: () => [] },
    chainRule: { type: "boolean", onCreate: () => false },
    source: { enum: true, items: ["api", "config"], onCreate: () => "api" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
