/**
 * gw.routing.v1.GovernanceService: virtual keys and routing rules. Every write is checked by the same parser the config
 * file uses, persisted, then applied to the in-memory registry the /v1 hot path reads. Values are shown
 * once, in the create response; reads redact them.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { fromJson, toJson, type DescMessage, type JsonObject, type Message } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../errors.js";
import { REDACTED } from "../mcp/client-spec.js";
import type { WindowState } from "../routing/hierarchy.js";
import type { ConfigWindow } from "../routing/usage-limits.js";
import { formatDuration } from "../config/duration.js";
import type { VirtualKey as RoutingVirtualKey } from "../routing/types.js";
import { deleteRecord, GovernanceGroupRecord, insertRecord, RoutingRuleRecord, saveRecord, UsageRecord, VirtualKeyRecord, writeRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import {
  BusinessUnitSchema,
  CacheModeSchema,
  CustomerSchema,
  GovernanceService,
  RoutingRuleSchema,
  TeamSchema,
  VirtualKeySchema,
  type BusinessUnit,
  type Customer,
  type RoutingRule as RoutingRuleMessage,
  type Team,
  type VirtualKey,
} from "../../gen/gw/routing/v1/governance_pb.js";
import { enumInputNumber, enumNumberRestName } from "../proto-json/enum-names.js";
import { applyFieldMask } from "../proto-json/field-mask.js";
import { emOf } from "./context.js";
import { FOR_UPDATE, writeEntity } from "./entity-write-lock.js";
import { assignRoutingRule, assignVirtualKey, checkRuleReferences, clashingKeyField, virtualKeyWireOf } from "./inference/records.js";
import {
  KIND_NAME,
  assignGroup,
  checkGroupDeletable,
  checkGroupReferences,
  checkKeyMembership,
  groupWireOf,
  parseGroupWire,
  type GroupKind,
} from "./inference/group-records.js";
import { parseRoutingRule, routingRuleMessageOf } from "./inference/routing-rule-input.js";
import type { ResponseCache } from "../inference/response-cache.js";
import type { InferenceState } from "../inference/state.js";
import { parseVirtualKeyWire } from "./inference/virtual-key-wire.js";
import type { Wire } from "../config/wire-fields.js";
import { UsageHistoryStore } from "../inference/usage-history-store.js";
import { historyRangeOf, usageHistoryMessage } from "./usage-history-wire.js";

/** What the governance service needs. */
export interface GovernanceServiceDeps {
  store: Store;
  logger: Logger;
  inference: InferenceState;
  /** Called after a key is written or deleted, so per-user credentials follow its mcp_configs (orphan, restore, remove). */
  onVirtualKeyChanged?: (virtualKeyId: string, deleted: boolean) => Promise<void>;
  /** The response cache: a key may only ask for a mode it can serve here. */
  cache?: ResponseCache;
}


/** The wire JSON of a request's key (snake_case, only set fields). */
function wireOf(key: VirtualKey | undefined): Wire {
  if (key === undefined) throw invalidField("virtual_key", "is required");
  const json = toJson(VirtualKeySchema, key, { useProtoFieldName: true });
  const wire = json !== null && typeof json === "object" && !Array.isArray(json) ? (json as Wire) : {};
  // The wire writes the presence-aware list as its bare array; unset stays absent.
  const mcpConfigs = wire["mcp_configs"];
  if (mcpConfigs !== undefined) wire["mcp_configs"] = (mcpConfigs as { values?: unknown[] } | null)?.values ?? [];
  // The wire (and the store) name the cache mode as REST does: "direct", not CACHE_MODE_DIRECT.
  if (key.cache !== undefined) wire["cache"] = { ...(wire["cache"] as Wire | undefined), mode: enumNumberRestName(CacheModeSchema, key.cache.mode) ?? "off" };
  return wire;
}

/** A stored `cache` object with its mode as the proto JSON reader takes it. */
function cacheJsonOf(cache: unknown): unknown {
  if (cache === null || typeof cache !== "object" || Array.isArray(cache)) return cache;
  const mode = (cache as Wire)["mode"];
  return { ...cache, mode: typeof mode === "string" ? (enumInputNumber(CacheModeSchema, mode) ?? 0) : 0 };
}

/** The proto message of a stored key; the value only when `showValue` (the create response). */
function messageOf(rec: VirtualKeyRecord, showValue: boolean): VirtualKey {
  const { mcp_configs: mcpConfigs, cache, ...wire } = virtualKeyWireOf(rec);
  const json = {
    ...wire,
    value: showValue ? rec.value : REDACTED,
    ...(Array.isArray(mcpConfigs) ? { mcp_configs: { values: mcpConfigs } } : {}),
    ...(cache !== undefined ? { cache: cacheJsonOf(cache) } : {}),
  };
  const key = fromJson(VirtualKeySchema, json as JsonObject);
  key.createdAt = timestampFromDate(rec.createdAt);
  key.updatedAt = timestampFromDate(rec.updatedAt);
  return key;
}

/** A stored key, or a 404; `forUpdate` locks its row for the write's transaction. */
async function getRecord(em: EntityManager, id: string, forUpdate = false): Promise<VirtualKeyRecord> {
  if (id.trim() === "") throw invalidField("id", "is required");
  const rec = await em.findOne(VirtualKeyRecord, { id }, forUpdate ? FOR_UPDATE : {});
  if (!rec) throw new GatewayError("not_found", `virtual key "${id}" does not exist`, { type: "virtual_key_not_found" });
  return rec;
}

/** A 409 when another key has the same name or value. */
async function assertUnique(em: EntityManager, id: string, name: string, value: string): Promise<void> {
  const field = await clashingKeyField(em, id, name, value);
  if (field !== null) throw new GatewayError("already_exists", `another virtual key already has this ${field}; every key needs its own ${field}`, { field });
}

/** A stored routing rule, or a 404; `forUpdate` locks its row for the write's transaction. */
async function getRuleRecord(em: EntityManager, id: string, forUpdate = false): Promise<RoutingRuleRecord> {
  if (id.trim() === "") throw invalidField("id", "is required");
  const rec = await em.findOne(RoutingRuleRecord, { id }, forUpdate ? FOR_UPDATE : {});
  if (!rec) throw new GatewayError("not_found", `routing rule "${id}" does not exist`, { type: "routing_rule_not_found" });
  return rec;
}

/** The CRUD of one kind of group (business units, customers or teams) over its proto message. */
function groupCrud<T extends Message>(kind: GroupKind, schema: DescMessage, deps: GovernanceServiceDeps) {
  const { store, inference } = deps;
  const what = KIND_NAME[kind];
  const messageOf = (rec: GovernanceGroupRecord): T => {
    const msg = fromJson(schema, groupWireOf(rec) as JsonObject) as T & { createdAt?: unknown; updatedAt?: unknown };
    msg.createdAt = timestampFromDate(rec.createdAt);
    msg.updatedAt = timestampFromDate(rec.updatedAt);
    return msg;
  };
  const wireOfMessage = (msg: T | undefined, field: string): Wire => {
    if (msg === undefined) throw invalidField(field, "is required");
    const json = toJson(schema, msg, { useProtoFieldName: true }) as Wire;
    delete json["created_at"];
    delete json["updated_at"];
    return json;
  };
  const getRec = async (em: EntityManager, id: string, forUpdate = false): Promise<GovernanceGroupRecord> => {
    if (id.trim() === "") throw invalidField("id", "is required");
    const rec = await em.findOne(GovernanceGroupRecord, { id, kind }, forUpdate ? FOR_UPDATE : {});
    if (!rec) throw new GatewayError("not_found", `${what} "${id}" does not exist`, { type: `${kind}_not_found` });
    return rec;
  };
  // Ids are unique across the group kinds (they share one table), so the lock is the row's, whatever its kind.
  const ref = (id: string) => ({ kind: "governance_group", id });
  const save = async (em: EntityManager, existing: GovernanceGroupRecord | null, wire: Wire) => {
    const parsed = parseGroupWire(kind, wire, (f) => f);
    await checkGroupReferences(em, parsed, (f) => f);
    const rec = assignGroup(em, existing, parsed, existing?.source ?? "api");
    await saveRecord(em, rec);
    return { rec, owner: parsed.owner };
  };
  const install = ({ owner }: Awaited<ReturnType<typeof save>>): void => inference.hierarchy.put(owner);
  return {
    async create(msg: T | undefined, field: string): Promise<T> {
      const wire = wireOfMessage(msg, field);
      if (wire["id"] === undefined || wire["id"] === "") wire["id"] = `${kind.replace("_", "-")}-${randomUUID()}`;
      const id = String(wire["id"]);
      const { rec } = await writeEntity(store, ref(id), async (tx) => {
        if (await tx.findOne(GovernanceGroupRecord, { id })) throw new GatewayError("already_exists", `"${id}" already exists`, { field: "id" });
        return save(tx, null, wire);
      }, install);
      deps.logger.info({ id: rec.id, kind }, `${what} created`);
      return messageOf(rec);
    },
    async list(ctx: HandlerContext): Promise<T[]> {
      const recs = await emOf(ctx, store).find(GovernanceGroupRecord, { kind }, { orderBy: { createdAt: "asc", id: "asc" } });
      return recs.map(messageOf);
    },
    async get(id: string, ctx: HandlerContext): Promise<T> {
      return messageOf(await getRec(emOf(ctx, store), id));
    },
    async update(id: string, msg: T | undefined, paths: readonly string[], field: string): Promise<T> {
      const { rec: saved } = await writeEntity(store, ref(id), async (tx) => {
        const rec = await getRec(tx, id, true);
        if (msg === undefined) throw invalidField(field, "is required");
        const next = wireOfMessage(applyFieldMask(schema, messageOf(rec), msg, paths, `a ${what}`), field);
        return save(tx, rec, next);
      }, install);
      deps.logger.info({ id: saved.id, kind, fields: paths }, `${what} updated`);
      return messageOf(saved);
    },
    async remove(id: string): Promise<void> {
      const rec = await writeEntity(store, ref(id), async (tx) => {
        const found = await getRec(tx, id, true);
        await checkGroupDeletable(tx, found);
        await deleteRecord(tx, found);
        return found;
      }, (found) => inference.hierarchy.remove(kind, found.id));
      deps.logger.info({ id: rec.id, kind }, `${what} deleted`);
    },
  };
}

function windowJson(window: WindowState | null) {
  if (window === null) return undefined;
  // A window that never resets has no reset time to show.
  const resetsAt = Number.isFinite(window.resetsAt) ? new Date(window.resetsAt).toISOString() : "";
  return { used: window.used, maxLimit: window.maxLimit, resetDuration: window.resetDuration, resetsAt };
}

/** A provider config's window in the hierarchy's shape. */
function configWindow(window: ConfigWindow | null): WindowState | null {
  return window === null ? null : { used: window.used, maxLimit: window.maxLimit, resetDuration: formatDuration(Math.max(0, window.resetDurationMs)), resetsAt: window.resetsAtMs };
}

function ruleOf(rule: RoutingRuleMessage | undefined): RoutingRuleMessage {
  if (rule === undefined) throw invalidField("routing_rule", "is required");
  return rule;
}

/** Creates the service implementation. */
export function createGovernanceService(deps: GovernanceServiceDeps): ServiceImpl<typeof GovernanceService> {
  const { store, inference } = deps;
  /** Semantic caching where this gateway cannot do it is refused, never stored and silently served as direct. */
  const checkCacheSupported = (key: RoutingVirtualKey): void => {
    const problem = deps.cache?.semanticProblem ?? null;
    if (key.cache?.mode === "semantic" && problem !== null) throw invalidField("cache.mode", `${problem}; use "direct"`);
  };
  const units = groupCrud<BusinessUnit>("business_unit", BusinessUnitSchema, deps);
  const customers = groupCrud<Customer>("customer", CustomerSchema, deps);
  const teams = groupCrud<Team>("team", TeamSchema, deps);
  return {
    async getUsageHistory(req) {
      const range = historyRangeOf(req.range);
      return usageHistoryMessage(range, await new UsageHistoryStore(store, inference.usageHistory).read(range));
    },

    createBusinessUnit: async (req) => ({ businessUnit: await units.create(req.businessUnit, "business_unit") }),
    listBusinessUnits: async (_req, ctx) => {
      const businessUnits = await units.list(ctx);
      return { businessUnits, count: businessUnits.length };
    },
    getBusinessUnit: async (req, ctx) => ({ businessUnit: await units.get(req.id, ctx) }),
    updateBusinessUnit: async (req) => ({ businessUnit: await units.update(req.id, req.businessUnit, req.updateMask?.paths ?? [], "business_unit") }),
    deleteBusinessUnit: async (req) => {
      await units.remove(req.id);
      return { status: "success" };
    },
    createCustomer: async (req) => ({ customer: await customers.create(req.customer, "customer") }),
    listCustomers: async (_req, ctx) => {
      const all = await customers.list(ctx);
      return { customers: all, count: all.length };
    },
    getCustomer: async (req, ctx) => ({ customer: await customers.get(req.id, ctx) }),
    updateCustomer: async (req) => ({ customer: await customers.update(req.id, req.customer, req.updateMask?.paths ?? [], "customer") }),
    deleteCustomer: async (req) => {
      await customers.remove(req.id);
      return { status: "success" };
    },
    createTeam: async (req) => ({ team: await teams.create(req.team, "team") }),
    listTeams: async (_req, ctx) => {
      const all = await teams.list(ctx);
      return { teams: all, count: all.length };
    },
    getTeam: async (req, ctx) => ({ team: await teams.get(req.id, ctx) }),
    updateTeam: async (req) => ({ team: await teams.update(req.id, req.team, req.updateMask?.paths ?? [], "team") }),
    deleteTeam: async (req) => {
      await teams.remove(req.id);
      return { status: "success" };
    },

    listGroupUsage() {
      const levels = inference.hierarchy.groups().map((level) => {
        const budget = windowJson(level.budget);
        const requests = windowJson(level.requests);
        const tokens = windowJson(level.tokens);
        return { level: level.owner.level, id: level.owner.id, name: level.owner.name, ...(budget ? { budget } : {}), ...(requests ? { requests } : {}), ...(tokens ? { tokens } : {}) };
      });
      return { levels };
    },

    getVirtualKeyUsage(req) {
      const key = inference.virtualKeys.byId(req.id);
      if (key === null) throw new GatewayError("not_found", `virtual key "${req.id}" does not exist`, { type: "virtual_key_not_found" });
      const [own, ...above] = inference.hierarchy.usage(key);
      // The key's provider configs sit between the key itself and its team, as the checks run.
      const configs = key.providerConfigs.map((config) => {
        const windows = inference.limits.windows(key.id, config);
        return { owner: { level: "provider_config", id: config.provider, name: config.provider }, budget: configWindow(windows.budget), requests: null, tokens: configWindow(windows.tokens) };
      });
      const levels = [...(own ? [own] : []), ...configs, ...above].map((level) => {
        const budget = windowJson(level.budget);
        const requests = windowJson(level.requests);
        const tokens = windowJson(level.tokens);
        return {
          level: level.owner.level,
          id: level.owner.id,
          name: level.owner.name,
          ...(budget ? { budget } : {}),
          ...(requests ? { requests } : {}),
          ...(tokens ? { tokens } : {}),
        };
      });
      return { levels };
    },

    async createVirtualKey(req) {
      const wire = wireOf(req.virtualKey);
      wire["id"] ??= `vk-${randomUUID()}`;
      if (wire["value"] === undefined || wire["value"] === "") wire["value"] = `sk-gw-${randomBytes(24).toString("base64url")}`;
      const parsed = parseVirtualKeyWire(wire, "");
      checkCacheSupported(parsed.key);
      const rec = await writeEntity(store, { kind: "virtual_key", id: parsed.key.id }, async (em) => {
        if (await em.findOne(VirtualKeyRecord, { id: parsed.key.id })) {
          throw new GatewayError("already_exists", `virtual key "${parsed.key.id}" already exists`, { field: "id" });
        }
        await assertUnique(em, parsed.key.id, parsed.key.name, parsed.key.value);
        await checkKeyMembership(em, parsed, (field) => field);
        const created = assignVirtualKey(em, null, parsed, "api");
        await insertRecord(em, created);
        return created;
      }, async (created) => {
        inference.putVirtualKey(parsed.key);
        await deps.onVirtualKeyChanged?.(created.id, false);
      });
      deps.logger.info({ virtual_key_id: rec.id }, "virtual key created");
      return { virtualKey: messageOf(rec, true) };
    },

    async listVirtualKeys(_req, ctx) {
      const recs = await emOf(ctx, store).find(VirtualKeyRecord, {}, { orderBy: { createdAt: "asc", id: "asc" } });
      return { virtualKeys: recs.map((rec) => messageOf(rec, false)), count: recs.length };
    },

    async getVirtualKey(req, ctx) {
      return { virtualKey: messageOf(await getRecord(emOf(ctx, store), req.id), false) };
    },

    async updateVirtualKey(req) {
      const paths = req.updateMask?.paths ?? [];
      const { rec } = await writeEntity(store, { kind: "virtual_key", id: req.id }, async (em) => {
        const rec = await getRecord(em, req.id, true);
        if (req.virtualKey === undefined) throw invalidField("virtual_key", "is required");
        const next = wireOf(applyFieldMask(VirtualKeySchema, messageOf(rec, false), req.virtualKey, paths, "a virtual key"));
        // The redacted placeholder, as read back from GET, keeps the stored secret.
        if (next["value"] === undefined || next["value"] === REDACTED) next["value"] = rec.value;
        delete next["created_at"];
        delete next["updated_at"];
        const parsed = parseVirtualKeyWire(next, "");
        checkCacheSupported(parsed.key);
        await assertUnique(em, rec.id, parsed.key.name, parsed.key.value);
        await checkKeyMembership(em, parsed, (field) => field);
        assignVirtualKey(em, rec, parsed, rec.source);
        await writeRecord(em, rec);
        return { rec, key: parsed.key };
      }, async ({ rec, key }) => {
        inference.putVirtualKey(key);
        await deps.onVirtualKeyChanged?.(rec.id, false);
      });
      deps.logger.info({ virtual_key_id: rec.id, fields: paths }, "virtual key updated");
      return { virtualKey: messageOf(rec, false) };
    },

    async deleteVirtualKey(req) {
      const { rec } = await writeEntity(store, { kind: "virtual_key", id: req.id }, async (em) => {
        const rec = await getRecord(em, req.id, true);
        await deleteRecord(em, rec);
        await em.nativeDelete(UsageRecord, { virtualKeyId: rec.id });
        // Rules scoped to the key go with it: nothing else could ever match them.
        const rules = await em.find(RoutingRuleRecord, { scope: "virtual_key", scopeId: rec.id }, FOR_UPDATE);
        if (rules.length > 0) await em.nativeDelete(RoutingRuleRecord, { id: { $in: rules.map((rule) => rule.id) } });
        return { rec, rules };
      }, async ({ rec, rules }) => {
        inference.removeVirtualKey(rec.id);
        for (const rule of rules) inference.routingRules.remove(rule.id);
        await deps.onVirtualKeyChanged?.(rec.id, true);
      });
      deps.logger.info({ virtual_key_id: rec.id }, "virtual key deleted");
      return { status: "success" };
    },

    async createRoutingRule(req) {
      const msg = ruleOf(req.routingRule);
      if (msg.id === "") msg.id = `rr-${randomUUID()}`;
      const parsed = parseRoutingRule(msg, (field) => field);
      const rec = await writeEntity(store, { kind: "routing_rule", id: parsed.fields.id }, async (em) => {
        if (await em.findOne(RoutingRuleRecord, { id: parsed.fields.id })) {
          throw new GatewayError("already_exists", `routing rule "${parsed.fields.id}" already exists`, { field: "id" });
        }
        await checkRuleReferences(em, parsed, (field) => field);
        const created = assignRoutingRule(em, null, parsed, "api");
        await insertRecord(em, created);
        return created;
      }, () => inference.routingRules.put(parsed.rule));
      deps.logger.info({ routing_rule_id: rec.id }, "routing rule created");
      return { routingRule: routingRuleMessageOf(rec) };
    },

    async listRoutingRules(_req, ctx) {
      const recs = await emOf(ctx, store).find(RoutingRuleRecord, {}, { orderBy: { createdAt: "asc", id: "asc" } });
      return { routingRules: recs.map(routingRuleMessageOf), count: recs.length };
    },

    async getRoutingRule(req, ctx) {
      return { routingRule: routingRuleMessageOf(await getRuleRecord(emOf(ctx, store), req.id)) };
    },

    async updateRoutingRule(req) {
      const paths = req.updateMask?.paths ?? [];
      const { rec } = await writeEntity(store, { kind: "routing_rule", id: req.id }, async (em) => {
        const rec = await getRuleRecord(em, req.id, true);
        const next = applyFieldMask(RoutingRuleSchema, routingRuleMessageOf(rec), ruleOf(req.routingRule), paths, "a routing rule");
        const parsed = parseRoutingRule(next, (field) => field);
        await checkRuleReferences(em, parsed, (field) => field);
        assignRoutingRule(em, rec, parsed, rec.source);
        await writeRecord(em, rec);
        return { rec, rule: parsed.rule };
      }, ({ rule }) => inference.routingRules.put(rule));
      deps.logger.info({ routing_rule_id: rec.id, fields: paths }, "routing rule updated");
      return { routingRule: routingRuleMessageOf(rec) };
    },

    async deleteRoutingRule(req) {
      const rec = await writeEntity(store, { kind: "routing_rule", id: req.id }, async (em) => {
        const found = await getRuleRecord(em, req.id, true);
        await deleteRecord(em, found);
        return found;
      }, (found) => inference.routingRules.remove(found.id));
      deps.logger.info({ routing_rule_id: rec.id }, "routing rule deleted");
      return { status: "success" };
    },

    listRoutingLog(req) {
      const limit = req.limit ?? undefined;
      if (limit !== undefined && limit <= 0) throw invalidField("limit", `must be a positive number, got ${limit}`);
      const entries = inference.routingLog.recent(limit).map((entry) => ({ ...entry, engines: [...entry.engines], fallbacks: [...entry.fallbacks] }));
      return { entries, count: entries.length };
    },

    listRoutes() {
      const health = inference.routeHealth;
      health.refresh();
      const now = health.now();
      const routes = [];
      for (const route of health.routes()) {
        const base = {
          provider: route.provider,
          state: route.state,
          errorRate: route.errorRate(now),
          latencyMsPerToken: route.latencyPerToken,
          requests: BigInt(route.requests),
          lastChangeAt: new Date(route.lastChangeAt).toISOString(),
        };
        if (route.keyId === "") {
          routes.push({ ...base, weight: route.factor });
          continue;
        }
        const key = inference.providers.get(route.provider)?.keys.find((candidate) => candidate.id === route.keyId);
        routes.push({ ...base, keyId: route.keyId, ...(key ? { keyName: key.name } : {}), weight: (key?.weight ?? 1) * route.factor });
      }
      return { routes };
    },
  };
}

