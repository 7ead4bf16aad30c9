/**
 * gw.routing.v1.GovernanceService: virtual keys. Every write is checked by the same parser the config
 * file uses, persisted, then applied to the in-memory registry the /v1 hot path reads. Values are shown
 * once, in the create response; reads redact them.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../errors.js";
import { REDACTED } from "../mcp/client-spec.js";
import { UsageRecord, VirtualKeyRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { GovernanceService, VirtualKeySchema, type VirtualKey } from "../../gen/gw/routing/v1/governance_pb.js";
import { applyFieldMask } from "../proto-json/field-mask.js";
import { kEntityManager } from "./context.js";
import { assignVirtualKey, clashingKeyField, virtualKeyWireOf } from "./inference/records.js";
import type { InferenceState } from "./inference/state.js";
import { parseVirtualKeyWire } from "./inference/virtual-key-wire.js";
import type { Wire } from "./inference/wire-fields.js";

/** What the governance service needs. */
export interface GovernanceServiceDeps {
  store: Store;
  logger: Logger;
  inference: InferenceState;
  /** Called after a key is written or deleted, so per-user credentials follow its mcp_configs (orphan, restore, remove). */
  onVirtualKeyChanged?: (virtualKeyId: string, deleted: boolean) => Promise<void>;
}

function emOf(ctx: HandlerContext, store: Store): EntityManager {
  return ctx.values.get(kEntityManager) ?? store.fork();
}

function routingRulesUnsupported(): never {
  throw new GatewayError("unimplemented", "routing rules are not supported by this gateway yet; route with virtual keys' provider_configs and request fallbacks", {
    type: "routing_rules_unsupported",
  });
}

/** The wire JSON of a request's key (snake_case, only set fields). */
function wireOf(key: VirtualKey | undefined): Wire {
  if (key === undefined) throw invalidField("virtual_key", "is required");
  const json = toJson(VirtualKeySchema, key, { useProtoFieldName: true });
  const wire = json !== null && typeof json === "object" && !Array.isArray(json) ? (json as Wire) : {};
  // The wire writes the presence-aware list as its bare array; unset stays absent.
  const mcpConfigs = wire["mcp_configs"];
  if (mcpConfigs !== undefined) wire["mcp_configs"] = (mcpConfigs as { values?: unknown[] } | null)?.values ?? [];
  return wire;
}

/** The proto message of a stored key; the value only when `showValue` (the create response). */
function messageOf(rec: VirtualKeyRecord, showValue: boolean): VirtualKey {
  const { mcp_configs: mcpConfigs, ...wire } = virtualKeyWireOf(rec);
  const json = { ...wire, value: showValue ? rec.value : REDACTED, ...(Array.isArray(mcpConfigs) ? { mcp_configs: { values: mcpConfigs } } : {}) };
  const key = fromJson(VirtualKeySchema, json as JsonObject);
  key.createdAt = timestampFromDate(rec.createdAt);
  key.updatedAt = timestampFromDate(rec.updatedAt);
  return key;
}

async function getRecord(em: EntityManager, id: string): Promise<VirtualKeyRecord> {
  if (id.trim() === "") throw invalidField("id", "is required");
  const rec = await em.findOne(VirtualKeyRecord, { id });
  if (!rec) throw new GatewayError("not_found", `virtual key "${id}" does not exist`, { type: "virtual_key_not_found" });
  return rec;
}

/** A 409 when another key has the same name or value. */
async function assertUnique(em: EntityManager, id: string, name: string, value: string): Promise<void> {
  const field = await clashingKeyField(em, id, name, value);
  if (field !== null) throw new GatewayError("already_exists", `another virtual key already has this ${field}; every key needs its own ${field}`, { field });
}

/** Creates the service implementation. */
export function createGovernanceService(deps: GovernanceServiceDeps): ServiceImpl<typeof GovernanceService> {
  const { store, inference } = deps;
  return {
    async createVirtualKey(req, ctx) {
      const em = emOf(ctx, store);
      const wire = wireOf(req.virtualKey);
      wire["id"] ??= `vk-${randomUUID()}`;
      if (wire["value"] === undefined || wire["value"] === "") wire["value"] = `sk-gw-${randomBytes(24).toString("base64url")}`;
      const parsed = parseVirtualKeyWire(wire, "");
      if (await em.findOne(VirtualKeyRecord, { id: parsed.key.id })) {
        throw new GatewayError("already_exists", `virtual key "${parsed.key.id}" already exists`, { field: "id" });
      }
      await assertUnique(em, parsed.key.id, parsed.key.name, parsed.key.value);
      const rec = assignVirtualKey(em, null, parsed, "api");
      await em.flush();
      inference.putVirtualKey(parsed.key);
      await deps.onVirtualKeyChanged?.(rec.id, false);
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

    async updateVirtualKey(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await getRecord(em, req.id);
      const paths = req.updateMask?.paths ?? [];
      if (req.virtualKey === undefined) throw invalidField("virtual_key", "is required");
      const next = wireOf(applyFieldMask(VirtualKeySchema, messageOf(rec, false), req.virtualKey, paths, "a virtual key"));
      // The redacted placeholder, as read back from GET, keeps the stored secret.
      if (next["value"] === undefined || next["value"] === REDACTED) next["value"] = rec.value;
      delete next["created_at"];
      delete next["updated_at"];
      const parsed = parseVirtualKeyWire(next, "");
      await assertUnique(em, rec.id, parsed.key.name, parsed.key.value);
      assignVirtualKey(em, rec, parsed, rec.source);
      await em.flush();
      inference.putVirtualKey(parsed.key);
      await deps.onVirtualKeyChanged?.(rec.id, false);
      deps.logger.info({ virtual_key_id: rec.id, fields: paths }, "virtual key updated");
      return { virtualKey: messageOf(rec, false) };
    },

    async deleteVirtualKey(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await getRecord(em, req.id);
      em.remove(rec);
      await em.nativeDelete(UsageRecord, { virtualKeyId: rec.id });
      await em.flush();
      inference.removeVirtualKey(rec.id);
      await deps.onVirtualKeyChanged?.(rec.id, true);
      deps.logger.info({ virtual_key_id: rec.id }, "virtual key deleted");
      return { status: "success" };
    },

    createRoutingRule: routingRulesUnsupported,
    listRoutingRules: routingRulesUnsupported,
    getRoutingRule: routingRulesUnsupported,
    updateRoutingRule: routingRulesUnsupported,
    deleteRoutingRule: routingRulesUnsupported,
  };
}

