/**
 * Business units, customers and teams as wire JSON and records: checked once (names, parents that exist,
 * positive limits), stored, and turned into the hierarchy routing enforces. A level's parent kind is
 * fixed (team -> customer -> business unit), so the hierarchy can hold no cycle.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../../errors.js";
import type { LevelOwner } from "../../routing/hierarchy.js";
import { GovernanceGroupRecord, RoutingRuleRecord, VirtualKeyRecord, type Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import { levelBudgetOf, levelRateLimitOf } from "./level-limits-wire.js";
import type { InferenceState } from "../../inference/state.js";
import type { ParsedVirtualKey } from "./virtual-key-wire.js";
import { requiredString, type Wire } from "../../config/wire-fields.js";

/** A kind of group. */
export type GroupKind = GovernanceGroupRecord["kind"];

/** The field naming each kind's parent, and the parent's kind. */
export const PARENT_OF: Record<GroupKind, { field: string; kind: GroupKind } | null> = {
  business_unit: null,
  customer: { field: "business_unit_id", kind: "business_unit" },
  team: { field: "customer_id", kind: "customer" },
};

/** Every kind of group, parents first. */
export const GROUP_KINDS: readonly GroupKind[] = ["business_unit", "customer", "team"];

/** How a kind is named in messages. */
export const KIND_NAME: Record<GroupKind, string> = { business_unit: "business unit", customer: "customer", team: "team" };

/** A checked group: the hierarchy's owner and the record's columns. */
export interface ParsedGroup {
  owner: LevelOwner;
  fields: Pick<GovernanceGroupRecord, "id" | "kind" | "name" | "parentId" | "budget" | "rateLimit">;
}

const MAX_TEXT = 255;

/** Checks a group's wire JSON; `at` turns a field name into the path a 400 names. */
export function parseGroupWire(kind: GroupKind, raw: Wire, at: (field: string) => string): ParsedGroup {
  const id = requiredString(raw["id"], at("id"), `a unique id for the ${KIND_NAME[kind]}`);
  const name = requiredString(raw["name"], at("name"), "a human-readable name");
  for (const [field, value] of [["id", id], ["name", name]] as const) {
    if (value.length > MAX_TEXT) throw invalidField(at(field), `is ${value.length} characters long; use at most ${MAX_TEXT}`);
  }
  const parent = PARENT_OF[kind];
  const parentRaw = parent === null ? undefined : raw[parent.field];
  if (parentRaw !== undefined && parentRaw !== null && typeof parentRaw !== "string") throw invalidField(at(parent?.field ?? ""), "must be a string id");
  const parentId = typeof parentRaw === "string" ? parentRaw.trim() : "";
  const budget = levelBudgetOf(raw["budget"], at("budget"));
  const rateLimit = levelRateLimitOf(raw["rate_limit"], at("rate_limit"));
  return {
    owner: { level: kind, id, name, parentId, budget: budget?.budget ?? null, rateLimit: rateLimit?.rateLimit ?? null },
    fields: { id, kind, name, parentId, budget: budget?.wire ?? null, rateLimit: rateLimit?.wire ?? null },
  };
}

/** A group record's wire JSON. */
export function groupWireOf(rec: GovernanceGroupRecord): Wire {
  const parent = PARENT_OF[rec.kind];
  return {
    id: rec.id,
    name: rec.name,
    ...(parent !== null && rec.parentId !== "" ? { [parent.field]: rec.parentId } : {}),
    ...(rec.budget ? { budget: rec.budget } : {}),
    ...(rec.rateLimit ? { rate_limit: rec.rateLimit } : {}),
  };
}

async function groupOf(em: EntityManager, kind: GroupKind, id: string): Promise<GovernanceGroupRecord | null> {
  return em.findOne(GovernanceGroupRecord, { id, kind });
}

/** Checks what a group needs from the store: its parent exists, its name is free, its keys stay consistent. */
export async function checkGroupReferences(em: EntityManager, parsed: ParsedGroup, at: (field: string) => string): Promise<void> {
  const { kind, parentId, name, id } = parsed.fields;
  const parent = PARENT_OF[kind];
  if (parent !== null && parentId !== "" && !(await groupOf(em, parent.kind, parentId))) {
    throw invalidField(at(parent.field), `names no ${KIND_NAME[parent.kind]}: "${parentId}" does not exist`);
  }
  const other = await em.findOne(GovernanceGroupRecord, { id, kind: { $ne: kind } });
  if (other) throw invalidField(at("id"), `"${id}" is already the id of ${KIND_NAME[other.kind]} "${other.name}"; ids are unique across levels`);
  const clash = await em.findOne(GovernanceGroupRecord, { kind, name, id: { $ne: id } });
  if (clash) throw new GatewayError("already_exists", `${at("name")}: ${KIND_NAME[kind]} "${clash.id}" is already named "${name}"; every ${KIND_NAME[kind]} needs its own name`, { field: at("name") });
  if (kind === "team" && parentId !== "") {
    const keys = await em.find(VirtualKeyRecord, {});
    const stray = keys.find((k) => k.limits["team_id"] === id && typeof k.limits["customer_id"] === "string" && k.limits["customer_id"] !== parentId);
    if (stray) throw invalidField(at("customer_id"), `would put virtual key "${stray.id}" (customer "${String(stray.limits["customer_id"])}") in a team of another customer`);
  }
}

/** Checks a key's team and customer exist and agree (a key may not sit in a team of another customer). */
export async function checkKeyMembership(em: EntityManager, parsed: ParsedVirtualKey, at: (field: string) => string): Promise<void> {
  const { teamId, customerId } = parsed.key;
  const team = teamId === "" ? null : await groupOf(em, "team", teamId);
  if (teamId !== "" && team === null) throw invalidField(at("team_id"), `names no team: "${teamId}" does not exist`);
  if (customerId !== "" && !(await groupOf(em, "customer", customerId))) throw invalidField(at("customer_id"), `names no customer: "${customerId}" does not exist`);
  if (team !== null && customerId !== "" && team.parentId !== "" && team.parentId !== customerId) {
    throw invalidField(at("team_id"), `team "${teamId}" belongs to customer "${team.parentId}", not to the key's customer "${customerId}"`);
  }
}

/** Refuses deleting a group that still has members or routing rules. */
export async function checkGroupDeletable(em: EntityManager, rec: GovernanceGroupRecord): Promise<void> {
  const inUse = (what: string): GatewayError =>
    new GatewayError("failed_precondition", `${KIND_NAME[rec.kind]} "${rec.id}" still has ${what}; move or delete them first`, { type: "group_in_use" });
  const child = Object.entries(PARENT_OF).find(([, parent]) => parent?.kind === rec.kind)?.[0] as GroupKind | undefined;
  if (child !== undefined && (await em.count(GovernanceGroupRecord, { kind: child, parentId: rec.id })) > 0) throw inUse(`${KIND_NAME[child]}s`);
  if (rec.kind !== "business_unit") {
    const field = rec.kind === "team" ? "team_id" : "customer_id";
    if ((await em.find(VirtualKeyRecord, {})).some((k) => k.limits[field] === rec.id)) throw inUse("virtual keys");
    if ((await em.count(RoutingRuleRecord, { scope: rec.kind, scopeId: rec.id })) > 0) throw inUse("routing rules");
  }
}

/** Writes a checked group onto a record (a new one when `existing` is null; not flushed). */
export function assignGroup(em: EntityManager, existing: GovernanceGroupRecord | null, parsed: ParsedGroup, source: "api" | "config"): GovernanceGroupRecord {
  if (existing === null) return em.create(GovernanceGroupRecord, { ...parsed.fields, source });
  Object.assign(existing, parsed.fields);
  return existing;
}

/**
 * Loads every group into the hierarchy (boot, config reload, and after the cluster's change notifications were
 * lost), and drops those no longer stored.
 */
export async function loadGroups(store: Store, state: InferenceState, logger: Logger): Promise<void> {
  const stored = await store.fork().find(GovernanceGroupRecord, {}, { orderBy: { id: "asc" } });
  const kept = new Set(stored.map((rec) => `${rec.kind}:${rec.id}`));
  for (const owner of state.hierarchy.owners()) if (!kept.has(`${owner.level}:${owner.id}`)) state.hierarchy.remove(owner.level, owner.id);
  for (const rec of stored) installGroup(state, logger, rec);
}

/**
 * Re-reads one group into the hierarchy (another node changed it): installed as stored, or removed from every
 * level once it is gone.
 */
export async function reloadGroup(store: Store, state: InferenceState, logger: Logger, id: string): Promise<void> {
  const rec = await store.fork().findOne(GovernanceGroupRecord, { id });
  for (const kind of GROUP_KINDS) {
    if (kind === rec?.kind) continue;
    // Ids are unique across levels, so no other level may hold it. A deleted group leaves every level, its
    // stored counters with it; a stored one is taken only from a level that still holds it, so no counters
    // are deleted at levels it never was.
    if (rec === null || state.hierarchy.get(kind, id) !== null) state.hierarchy.remove(kind, id);
  }
  if (rec !== null) installGroup(state, logger, rec);
}

/** Puts a stored group into the hierarchy; one that no longer passes validation is logged and left out. */
function installGroup(state: InferenceState, logger: Logger, rec: GovernanceGroupRecord): void {
  try {
    state.hierarchy.put(parseGroupWire(rec.kind, groupWireOf(rec), (field) => field).owner);
  } catch (err) {
    logger.error({ err, id: rec.id, kind: rec.kind }, "stored group no longer passes validation; its limits are not enforced until fixed through the API");
  }
}
