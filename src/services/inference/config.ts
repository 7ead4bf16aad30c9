/**
 * The inference configuration a config file declares: providers and virtual keys, checked at load (a bad
 * entry throws a GatewayError naming its path, so a bad file stops start-up) and kept as wire JSON for
 * seeding into the store, which is the source of truth afterwards.
 */
import type { ProviderFileConfig, RoutingRuleFileConfig, VirtualKeyFileConfig } from "../../config/file-config.js";
import { invalidField } from "../../errors.js";
import type { Clock, Random } from "../../routing/types.js";
import { checkProviderName, parseProviderWire } from "./provider-wire.js";
import { parseGroupWire, type GroupKind } from "./group-records.js";
import { parseRoutingRule, routingRuleFromJson } from "./routing-rule-input.js";
import { parseVirtualKeyWire } from "./virtual-key-wire.js";
import type { Wire } from "../../config/wire-fields.js";

/** The config file's groups by kind, wire JSON. */
export type FileGroups = Record<GroupKind, Wire[]>;

/** The config-file section of each kind of group. */
export const GROUP_SECTION: Record<GroupKind, string> = { business_unit: "business_units", customer: "customers", team: "teams" };

/** What the /v1 inference path is configured with (AppOptions.inference). */
export interface InferenceOptions {
  /** Providers declared in the config file: name -> wire JSON {keys, network_config}, already checked. */
  providers: Record<string, Wire>;
  /** Virtual keys declared in the config file, wire JSON, already checked. */
  virtualKeys: Wire[];
  /** Routing rules declared in the config file (governance.routing_rules), REST JSON, already checked. */
  routingRules?: Wire[];
  /** governance.business_units, customers and teams, wire JSON, already checked. */
  groups?: FileGroups;
  /** Dice for provider and key selection (default Math.random; tests pass a seeded one). */
  random?: Random;
  /** Upper bound on waiting for upstream headers and between body chunks (adapter default otherwise). */
  upstreamTimeoutMs?: number;
  /** How often budget and token counters are written to the store (default 1 s). */
  usageFlushIntervalMs?: number;
  /** Clock of the budget and rate-limit windows (default Date.now; tests move time). */
  clock?: Clock;
}

/** Builds InferenceOptions from the config file's `providers` and `governance.virtual_keys`, checking every entry. */
export function inferenceOptionsFromFile(
  providers: Readonly<Record<string, ProviderFileConfig>>,
  virtualKeys: readonly VirtualKeyFileConfig[],
  routingRules: readonly RoutingRuleFileConfig[] = [],
  groups: FileGroups = { business_unit: [], customer: [], team: [] },
): InferenceOptions {
  for (const [kind, entries] of Object.entries(groups) as [GroupKind, Wire[]][]) {
    const ids = new Map<string, number>();
    for (const [index, raw] of entries.entries()) {
      const path = `governance.${GROUP_SECTION[kind]}[${index}]`;
      const { fields } = parseGroupWire(kind, raw, (field) => `${path}.${field}`);
      const same = ids.get(fields.id);
      if (same !== undefined) throw invalidField(`${path}.id`, `"${fields.id}" is also the id of governance.${GROUP_SECTION[kind]}[${same}]`);
      ids.set(fields.id, index);
    }
  }
  const providerWires: Record<string, Wire> = {};
  for (const [name, provider] of Object.entries(providers)) {
    checkProviderName(name, `providers.${name}`);
    providerWires[name] = parseProviderWire(name, provider, `providers.${name}`).wire as unknown as Wire;
  }
  const ids = new Map<string, number>();
  const values = new Map<string, number>();
  const keys = virtualKeys.map((raw, index) => {
    const path = `governance.virtual_keys[${index}]`;
    const { key } = parseVirtualKeyWire(raw, path);
    const sameId = ids.get(key.id);
    if (sameId !== undefined) throw invalidField(`${path}.id`, `"${key.id}" is also the id of governance.virtual_keys[${sameId}]`);
    const sameValue = values.get(key.value);
    if (sameValue !== undefined) throw invalidField(`${path}.value`, `is the same secret as governance.virtual_keys[${sameValue}]; every key needs its own value`);
    ids.set(key.id, index);
    values.set(key.value, index);
    return raw as Wire;
  });
  const ruleIds = new Map<string, number>();
  const rules = routingRules.map((raw, index) => {
    const path = `governance.routing_rules[${index}]`;
    const { fields } = parseRoutingRule(routingRuleFromJson(raw, path), (field) => `${path}.${field}`);
    const same = ruleIds.get(fields.id);
    if (same !== undefined) throw invalidField(`${path}.id`, `"${fields.id}" is also the id of governance.routing_rules[${same}]`);
    ruleIds.set(fields.id, index);
    return raw as Wire;
  });
  return { providers: providerWires, virtualKeys: keys, routingRules: rules, groups };
}

export type { Inference, InferenceProvider } from "../../inference/state.js";
