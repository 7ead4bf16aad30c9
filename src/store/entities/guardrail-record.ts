/** One guardrail (table guardrail). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

/** A guardrail as stored, every default filled in by the API's parser; its `when` expression is compiled again when loaded. */
export class GuardrailRecord {
  declare [OptionalProps]?: "secretHeaders" | "redaction" | "source" | "createdAt" | "updatedAt";

  declare id: string;
  declare name: string;
  declare description: string;
  declare enabled: boolean;
  /** input, output, tool_input, tool_output and/or tool_definition. */
  declare stages: string[];
  /** global, customer, team, virtual_key or mcp_client. */
  declare scope: string;
  /** "" for global; the owner's id otherwise. */
  declare scopeId: string;
  /** The CEL expression; "" always applies. */
  declare whenExpression: string;
  /** Wire JSON (snake_case) of the check: {type, <type>: {settings}}, without the webhook's header values. */
  declare check: Record<string, unknown>;
  /** A webhook check's header values, encrypted at rest; null for other checks. */
  declare secretHeaders: Record<string, string> | null;
  /** block, redact or warn. */
  declare action: string;
  /** {strategy, replacement} of a redact guardrail; null otherwise. */
  declare redaction: { strategy: string; replacement: string } | null;
  /** allow or block. */
  declare onError: string;
  /** A duration string, as given. */
  declare timeout: string;
  declare samplingRate: number;
  declare source: "api" | "config";
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of GuardrailRecord; a name is unique among guardrails. */
export const GuardrailSchema = new EntitySchema<GuardrailRecord>({
  class: GuardrailRecord,
  tableName: "guardrail",
  properties: {
    id: { type: "string", primary: true },
    name: { type: "string", unique: "guardrail_name_unique" },
    description: { type: "text" },
    enabled: { type: "boolean" },
    stages: { type: "json" },
    scope: { type: "string" },
    scopeId: { type: "string" },
    whenExpression: { type: "text" },
    check: { type: "json" },
    secretHeaders: { type: new EncryptedJsonType<Record<string, string>>(), nullable: true, onCreate: () => null },
    action: { type: "string" },
    redaction: { type: "json", nullable: true, onCreate: () => null },
    onError: { type: "string" },
    timeout: { type: "string" },
    samplingRate: { type: "double" },
    source: { enum: true, items: ["api", "config"], onCreate: () => "api" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
