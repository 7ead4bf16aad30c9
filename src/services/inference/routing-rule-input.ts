/**
 * A routing rule as the admin API and the config file give it (gw.routing.v1.RoutingRule), checked once:
 * required fields, scope and scope_id, weighted targets, fallbacks, and the CEL condition compiled here,
 * so a rule that is stored always runs. The record fields it returns are what the store keeps.
 */
import { create, fromJson } from "@bufbuild/protobuf";
import { timestampFromDate, ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { GatewayError, invalidField } from "../../errors.js";
import { messageFromJson } from "../../proto-json/message-from-json.js";
import { compileCondition } from "../../routing/cel-expression.js";
import type { RoutingRule, RuleFallback, RuleScope, RuleTarget } from "../../routing/routing-rules.js";
import type { RoutingRuleRecord, StoredFallback } from "../../store/index.js";
import {
  RoutingRuleSchema,
  RoutingRuleScope,
  type RoutingRule as RoutingRuleMessage,
} from "../../../gen/gw/routing/v1/governance_pb.js";

/** The stored columns of a rule, besides its bookkeeping. */
export type RoutingRuleFields = Pick<
  RoutingRuleRecord,
  "id" | "name" | "description" | "enabled" | "priority" | "scope" | "scopeId" | "celExpression" | "targets" | "fallbacks" | "chainRule"
>;

/** A checked rule: the compiled form routing runs and the columns to store. */
export interface ParsedRoutingRule {
  rule: RoutingRule;
  fields: RoutingRuleFields;
}

const SCOPE_NAMES: Record<RoutingRuleScope, RuleScope> = {
  [RoutingRuleScope.UNSPECIFIED]: "global",
  [RoutingRuleScope.GLOBAL]: "global",
  [RoutingRuleScope.CUSTOMER]: "customer",
  [RoutingRuleScope.TEAM]: "team",
  [RoutingRuleScope.VIRTUAL_KEY]: "virtual_key",
};

const SCOPE_VALUES: Record<RuleScope, RoutingRuleScope> = {
  global: RoutingRuleScope.GLOBAL,
  customer: RoutingRuleScope.CUSTOMER,
  team: RoutingRuleScope.TEAM,
  virtual_key: RoutingRuleScope.VIRTUAL_KEY,
};

/** The id and name columns hold at most this many characters. */
const MAX_TEXT = 255;

function bounded(value: string, path: string, hint: string, required: boolean): string {
  if (required && value.trim() === "") throw invalidField(path, `is required: ${hint}`);
  if (value.length > MAX_TEXT) throw invalidField(path, `is ${value.length} characters long; use at most ${MAX_TEXT}`);
  return value;
}

/** Fields a fallback object may carry. */
const FALLBACK_FIELDS = new Set(["provider", "model", "key_id"]);

const FALLBACK_FORMS = `"<provider>/<model>", "<provider>/" for the chosen model on that provider, or {"provider", "model"?, "key_id"?}`;

/** One fallback as given (a string or an object) and as stored (the same JSON). */
function fallbackOf(value: Value, path: string): { fallback: RuleFallback; stored: StoredFallback } {
  const kind = value.kind;
  if (kind.case === "stringValue") {
    const text = kind.value;
    const slash = text.indexOf("/");
    if (slash <= 0) throw invalidField(path, `"${text}" must be written ${FALLBACK_FORMS}`);
    return { fallback: { provider: text.slice(0, slash), model: text.slice(slash + 1), keyId: "" }, stored: text };
  }
  if (kind.case !== "structValue") throw invalidField(path, `must be ${FALLBACK_FORMS}`);
  const text = (field: string): string => {
    const entry = kind.value.fields[field]?.kind;
    if (entry === undefined || entry.case === "nullValue") return "";
    if (entry.case !== "stringValue") throw invalidField(`${path}.${field}`, "must be a string");
    return bounded(entry.value, `${path}.${field}`, "", false);
  };
  for (const field of Object.keys(kind.value.fields)) {
    if (!FALLBACK_FIELDS.has(field)) throw invalidField(`${path}.${field}`, `is not a fallback field; use provider, model and key_id`);
  }
  const provider = text("provider");
  if (provider === "") throw invalidField(`${path}.provider`, "is required: the provider to fall back to");
  if (provider.includes("/")) throw invalidField(`${path}.provider`, `"${provider}" must be a provider name without "/"; put the model in model`);
  const model = text("model");
  const keyId = text("key_id");
  const stored: StoredFallback = { provider, ...(model !== "" ? { model } : {}), ...(keyId !== "" ? { key_id: keyId } : {}) };
  return { fallback: { provider, model, keyId }, stored };
}

/**
 * Checks a rule and compiles its condition. `at` turns a field name into the path a 400 names (the API
 * passes the bare name, the config file its entry's path). Whether scope_id names an existing owner is
 * the caller's check (it needs the store).
 */
export function parseRoutingRule(msg: RoutingRuleMessage, at: (field: string) => string): ParsedRoutingRule {
  const id = bounded(msg.id, at("id"), "a unique id for the rule", true);
  const name = bounded(msg.name, at("name"), "a name, unique within the rule's scope", true);
  const scope = SCOPE_NAMES[msg.scope];
  if (scope === undefined) throw invalidField(at("scope"), "must be one of global, customer, team, virtual_key");
  const scopeId = msg.scopeId.trim();
  if (scope === "global" && scopeId !== "") throw invalidField(at("scope_id"), "must be empty for a global rule; set scope to virtual_key, team or customer");
  if (scope !== "global") bounded(scopeId, at("scope_id"), `the id of the ${scope.replace("_", " ")} the rule applies to`, true);
  if (msg.targets.length === 0) throw invalidField(at("targets"), `needs at least one target, e.g. [{"provider": "openai", "model": "gpt-4o-mini", "weight": 1}]`);
  const targets: RuleTarget[] = msg.targets.map((target, index) => {
    const path = `${at("targets")}[${index}]`;
    const weight = target.weight ?? 1;
    if (!(Number.isFinite(weight) && weight > 0)) throw invalidField(`${path}.weight`, `must be a finite number > 0, got ${weight}`);
    if (target.provider === "" && target.model === "" && target.keyId === "") throw invalidField(path, "names nothing; set provider, model or key_id");
    if (target.keyId !== "" && target.provider === "") throw invalidField(`${path}.provider`, "is required with key_id: a key belongs to one provider");
    if (target.provider.includes("/")) throw invalidField(`${path}.provider`, `"${target.provider}" must be a provider name without "/"; put the model in model`);
    return { provider: target.provider, model: target.model, keyId: target.keyId, weight };
  });
  const given = msg.fallbacks.map((value, index) => fallbackOf(value, `${at("fallbacks")}[${index}]`));
  const fallbacks = given.map((g) => g.fallback);
  const condition = compileCondition(msg.celExpression, at("cel_expression"));
  const enabled = msg.enabled ?? true;
  const rule: RoutingRule = { id, name, enabled, priority: msg.priority, scope, scopeId, targets, fallbacks, chainRule: msg.chainRule, condition };
  return {
    rule,
    fields: {
      id,
      name,
      description: msg.description,
      enabled,
      priority: msg.priority,
      scope,
      scopeId,
      celExpression: msg.celExpression,
      targets: targets.map((t) => ({ provider: t.provider, model: t.model, key_id: t.keyId, weight: t.weight })),
      fallbacks: given.map((g) => g.stored),
      chainRule: msg.chainRule,
    },
  };
}

/** A rule from its REST JSON (the config file's form), read exactly as the API reads a body; `path` prefixes a 400's field. */
export function routingRuleFromJson(json: unknown, path: string): RoutingRuleMessage {
  try {
    return messageFromJson(RoutingRuleSchema, json, "", {}).message as RoutingRuleMessage;
  } catch (err) {
    if (err instanceof GatewayError && err.field !== undefined) throw invalidField(`${path}.${err.field}`, err.message.replace(/^[^:]*: /, ""));
    throw err;
  }
}

/** The API message of a stored rule. */
export function routingRuleMessageOf(rec: RoutingRuleRecord): RoutingRuleMessage {
  return create(RoutingRuleSchema, {
    id: rec.id,
    name: rec.name,
    description: rec.description,
    celExpression: rec.celExpression,
    targets: rec.targets.map((t) => ({
      provider: String(t["provider"] ?? ""),
      model: String(t["model"] ?? ""),
      keyId: String(t["key_id"] ?? ""),
      weight: typeof t["weight"] === "number" ? t["weight"] : 1,
    })),
    fallbacks: rec.fallbacks.map((f) => fromJson(ValueSchema, f)),
    priority: rec.priority,
    enabled: rec.enabled,
    scope: SCOPE_VALUES[rec.scope as RuleScope] ?? RoutingRuleScope.GLOBAL,
    scopeId: rec.scopeId,
    chainRule: rec.chainRule,
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
  });
}

/** Parses a stored rule again (boot load), e.g. to recompile its condition. */
export function parseStoredRoutingRule(rec: RoutingRuleRecord): ParsedRoutingRule {
  return parseRoutingRule(routingRuleMessageOf(rec), (field) => field);
}
