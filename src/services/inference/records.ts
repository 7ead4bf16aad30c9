/**
 * Providers and virtual keys in the store: wire JSON <-> records, the writes the admin API and the
 * config-file seeding share, and the boot load into the in-memory state.
 */
import { createHash } from "node:crypto";
import { GatewayError, invalidField } from "../../errors.js";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { RoutingRule } from "../../routing/routing-rules.js";
import { GovernanceGroupRecord, LevelUsageRecord, ProviderRecord, RoutingRuleRecord, UsageRecord, VirtualKeyRecord, type Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import type { ParsedProvider } from "./provider-wire.js";
import { parseProviderWire } from "./provider-wire.js";
import { loadGroups } from "./group-records.js";
import { parseStoredRoutingRule, type ParsedRoutingRule } from "./routing-rule-input.js";
import type { InferenceState } from "../../inference/state.js";
import { parseVirtualKeyWire, type ParsedVirtualKey } from "./virtual-key-wire.js";
import type { Wire } from "../../config/wire-fields.js";

/** SHA-256 of a virtual key's value: unique in the table without decrypting rows. */
export function valueHash(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/** The field ("name" or "value") another stored virtual key already uses, or null when both are free. */
export async function clashingKeyField(em: EntityManager, id: string, name: string, value: string): Promise<"name" | "value" | null> {
  const clash = await em.findOne(VirtualKeyRecord, { $or: [{ name }, { valueHash: valueHash(value) }] });
  if (!clash || clash.id === id) return null;
  return clash.name === name ? "name" : "value";
}

/** A provider record's wire JSON (secrets included: callers redact before answering). */
export function providerWireOf(rec: ProviderRecord): Wire {
  const limit = rec.concurrencyAndBufferSize;
  return { keys: rec.keys, network_config: rec.networkConfig, ...(limit ? { concurrency_and_buffer_size: limit } : {}) };
}

/** A virtual key record's wire JSON (the value included: callers redact before answering). */
export function virtualKeyWireOf(rec: VirtualKeyRecord): Wire {
  return {
    id: rec.id,
    name: rec.name,
    value: rec.value,
    is_active: rec.isActive,
    provider_configs: rec.providerConfigs,
    ...(rec.mcpConfigs === null ? {} : { mcp_configs: rec.mcpConfigs }),
    ...rec.limits,
  };
}

/** Inserts or overwrites a provider with a parsed definition (not flushed). */
export function assignProvider(em: EntityManager, existing: ProviderRecord | null, parsed: ParsedProvider, source: "api" | "config"): ProviderRecord {
  const fields = {
    keys: parsed.wire.keys,
    networkConfig: parsed.wire.network_config,
    concurrencyAndBufferSize: parsed.wire.concurrency_and_buffer_size ?? null,
  };
  if (existing) {
    Object.assign(existing, fields, { updatedAt: new Date() });
    return existing;
  }
  return em.create(ProviderRecord, { name: parsed.setup.name, ...fields, source });
}

/** Inserts or overwrites a virtual key with a parsed definition (not flushed). */
export function assignVirtualKey(em: EntityManager, existing: VirtualKeyRecord | null, parsed: ParsedVirtualKey, source: "api" | "config"): VirtualKeyRecord {
  const fields = {
    name: parsed.key.name,
    value: parsed.key.value,
    valueHash: valueHash(parsed.key.value),
    isActive: parsed.key.isActive,
    providerConfigs: parsed.providerConfigs,
    mcpConfigs: parsed.mcpConfigs,
    limits: parsed.limits,
  };
  if (existing) {
    Object.assign(existing, fields, { updatedAt: new Date() });
    return existing;
  }
  return em.create(VirtualKeyRecord, { id: parsed.key.id, ...fields, source });
}

/** Puts a stored provider and its listed models into the state. */
function loadProvider(state: InferenceState, rec: ProviderRecord, logger: Logger): void {
  try {
    state.putProvider(parseProviderWire(rec.name, providerWireOf(rec), `provider ${rec.name}`));
    state.setListedModels(rec.name, rec.listedModels);
  } catch (err) {
    // Rows are checked before they are written; one that no longer parses must not stop the gateway.
    logger.error({ err, provider: rec.name }, "stored provider no longer passes validation; it is not served until fixed through the API");
  }
}

/** Puts a stored virtual key into the state. */
function loadVirtualKey(state: InferenceState, rec: VirtualKeyRecord, logger: Logger): void {
  try {
    state.putVirtualKey(parseVirtualKeyWire(virtualKeyWireOf(rec), "").key);
  } catch (err) {
    logger.error({ err, virtual_key_id: rec.id }, "stored virtual key no longer passes validation; it is refused until fixed through the API");
  }
}

/** Loads the named providers and virtual keys from the store into the state, as the boot load does (a config reload). */
export async function reloadInference(store: Store, state: InferenceState, logger: Logger, only: { providers: readonly string[]; virtualKeys: readonly string[] }): Promise<void> {
  const em = store.fork();
  if (only.providers.length > 0) {
    for (const rec of await em.find(ProviderRecord, { name: { $in: [...only.providers] } })) loadProvider(state, rec, logger);
  }
  if (only.virtualKeys.length > 0) {
    for (const rec of await em.find(VirtualKeyRecord, { id: { $in: [...only.virtualKeys] } })) loadVirtualKey(state, rec, logger);
  }
}

/** Loads every provider, virtual key, routing rule and usage counter from the store into the state (boot). */
export async function loadInference(store: Store, state: InferenceState, logger: Logger): Promise<void> {
  const em = store.fork();
  for (const rec of await em.find(ProviderRecord, {}, { orderBy: { name: "asc" } })) loadProvider(state, rec, logger);
  await loadGroups(store, state, logger);
  for (const rec of await em.find(VirtualKeyRecord, {}, { orderBy: { id: "asc" } })) loadVirtualKey(state, rec, logger);
  await loadRoutingRules(store, state, logger);
  const levels = await em.find(LevelUsageRecord, {});
  state.hierarchy.restore(levels.map((rec) => ({ ownerKey: rec.ownerKey, counters: { budget: rec.budget, requests: rec.requests, tokens: rec.tokens } })));
  const usage = await em.find(UsageRecord, {});
  state.limits.restore({
    revision: 0,
    entries: usage.map((rec) => ({ virtualKeyId: rec.virtualKeyId, provider: rec.provider, budgets: rec.budgets, tokens: rec.tokens })),
  });
}

/** A stored routing rule compiled again; null (and logged) when it no longer passes validation. */
function storedRoutingRule(rec: RoutingRuleRecord, logger: Logger): RoutingRule | null {
  try {
    return parseStoredRoutingRule(rec).rule;
  } catch (err) {
    logger.error({ err, routing_rule_id: rec.id }, "stored routing rule no longer passes validation; it is skipped until fixed through the API");
    return null;
  }
}

/** Loads every stored routing rule into the state, compiling each condition again (boot and config reload). */
export async function loadRoutingRules(store: Store, state: InferenceState, logger: Logger): Promise<void> {
  const rules: RoutingRule[] = [];
  for (const rec of await store.fork().find(RoutingRuleRecord, {}, { orderBy: { id: "asc" } })) {
    const rule = storedRoutingRule(rec, logger);
    if (rule !== null) rules.push(rule);
  }
  state.routingRules.replaceAll(rules);
}

/** Reads one routing rule back into the state (another node's change): put as stored, or removed when gone or no longer valid. */
export async function reloadRoutingRule(store: Store, state: InferenceState, logger: Logger, id: string): Promise<void> {
  const rec = await store.fork().findOne(RoutingRuleRecord, { id });
  const rule = rec === null ? null : storedRoutingRule(rec, logger);
  if (rule === null) state.routingRules.remove(id);
  else state.routingRules.put(rule);
}

/**
 * Checks what a rule needs from the store: its scope names an existing owner and its name is free in
 * that scope. `at` turns a field name into the path a 400 names.
 */
export async function checkRuleReferences(em: EntityManager, parsed: ParsedRoutingRule, at: (field: string) => string): Promise<void> {
  const { scope, scopeId, name, id } = parsed.fields;
  if (scope === "virtual_key" && !(await em.findOne(VirtualKeyRecord, { id: scopeId }))) {
    throw invalidField(at("scope_id"), `names no virtual key: "${scopeId}" does not exist`);
  }
  if ((scope === "team" || scope === "customer") && !(await em.findOne(GovernanceGroupRecord, { id: scopeId, kind: scope }))) {
    throw invalidField(at("scope_id"), `names no ${scope}: "${scopeId}" does not exist`);
  }
  const clash = await em.findOne(RoutingRuleRecord, { scope, scopeId, name, id: { $ne: id } });
  if (clash) throw new GatewayError("already_exists", `${at("name")}: routing rule "${clash.id}" in the same scope is already named "${name}"; names are unique within a scope`, { field: at("name") });
}

/** Writes a checked rule onto a record (a new one when `existing` is null). */
export function assignRoutingRule(em: EntityManager, existing: RoutingRuleRecord | null, parsed: ParsedRoutingRule, source: "api" | "config"): RoutingRuleRecord {
  if (existing === null) return em.create(RoutingRuleRecord, { ...parsed.fields, source });
  Object.assign(existing, parsed.fields);
  return existing;
}

