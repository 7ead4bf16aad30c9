/**
 * gw.catalog.v1.ProviderService: providers and their keys. Writes are checked by the parser the config
 * file uses, persisted (key values encrypted), applied to the in-memory state the /v1 path reads, and
 * followed by a list-models fetch whose failure is only a warning. Key values are never returned.
 */
import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../errors.js";
import { REDACTED } from "../mcp/client-spec.js";
import { deleteRecord, insertRecord, ProviderRecord, writeRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { ProviderSchema, ProviderService, type Provider } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { applyFieldMask } from "../proto-json/field-mask.js";
import { emOf } from "./context.js";
import { FOR_UPDATE, writeEntity } from "./entity-write-lock.js";
import { keepBlockSecrets, redactBlocks } from "./inference/cloud-key-wire.js";
import { checkProviderName, parseProviderWire } from "./inference/provider-wire.js";
import { assignProvider, providerWireOf } from "./inference/records.js";
import type { ProviderModelLists } from "./inference/model-lists.js";
import type { InferenceState } from "../inference/state.js";
import { isWire, type Wire } from "../config/wire-fields.js";

/** What the provider service needs. */
export interface ProviderServiceDeps {
  store: Store;
  logger: Logger;
  inference: InferenceState;
  /** The provider list-models calls. */
  modelLists: ProviderModelLists;
}


/** A key as reads show it: its value and its cloud block's secrets redacted. */
function redactKey(key: Wire): Wire {
  const redacted = redactBlocks(key);
  return typeof redacted["value"] === "string" && redacted["value"] !== "" ? { ...redacted, value: REDACTED } : redacted;
}

function messageOf(rec: ProviderRecord): Provider {
  // `provider` is input-only on REST; set here so that an update sending it back unchanged passes the immutability check.
  return fromJson(ProviderSchema, { name: rec.name, provider: rec.name, ...providerWireOf(rec), keys: rec.keys.map(redactKey) } as JsonObject);
}

/** The new provider's name: `name`, or `provider` as Bifrost's body gives it; both given must agree. */
function nameOf(wire: Wire): string {
  const name = typeof wire["name"] === "string" ? wire["name"] : "";
  const provider = typeof wire["provider"] === "string" ? wire["provider"] : "";
  if (name !== "" && provider !== "" && name !== provider) {
    throw invalidField("provider.provider", `is "${provider}" but provider.name is "${name}"; give one of them, or the same name in both`);
  }
  if (name === "" && provider === "") throw invalidField("provider.name", 'is required: the provider name, e.g. "openai" (Bifrost\'s body may give it as "provider")');
  return name === "" ? provider : name;
}

function wireOf(provider: Provider | undefined): Wire {
  if (provider === undefined) throw invalidField("provider", "is required");
  const json = toJson(ProviderSchema, provider, { useProtoFieldName: true });
  return isWire(json) ? json : {};
}

/** A stored provider, or a 404; `forUpdate` locks its row for the write's transaction. */
async function getRecord(em: EntityManager, name: string, forUpdate = false): Promise<ProviderRecord> {
  if (name.trim() === "") throw invalidField("name", "is required");
  const rec = await em.findOne(ProviderRecord, { name }, forUpdate ? FOR_UPDATE : {});
  if (!rec) throw new GatewayError("not_found", `provider "${name}" is not configured`, { type: "provider_not_found" });
  return rec;
}

/** Keys sent back with the redacted placeholder (or no value) keep the stored secrets of the same key id. */
function keepStoredValues(incoming: unknown, stored: readonly Wire[]): unknown {
  if (!Array.isArray(incoming)) return incoming;
  const byId = new Map(stored.map((key) => [key["id"], key] as const));
  return incoming.map((key: unknown) => {
    if (!isWire(key)) return key;
    const old = byId.get(key["id"]);
    if (old === undefined) return key;
    const merged = keepBlockSecrets(key, old);
    if (merged["value"] === undefined || merged["value"] === "" || merged["value"] === REDACTED) merged["value"] = old["value"];
    return merged;
  });
}

/** Creates the service implementation. */
export function createProviderService(deps: ProviderServiceDeps): ServiceImpl<typeof ProviderService> {
  const { store, inference, logger } = deps;
  const modelLists = deps.modelLists;

  return {
    async createProvider(req) {
      const wire = wireOf(req.provider);
      const name = nameOf(wire);
      checkProviderName(name, "name");
      const { rec } = await writeEntity(store, { kind: "provider", id: name }, async (em) => {
        if (await em.findOne(ProviderRecord, { name })) {
          throw new GatewayError("already_exists", `provider "${name}" already exists; change it with PUT /api/v1/providers/${name}`, { field: "name" });
        }
        const parsed = parseProviderWire(name, wire, "provider");
        const created = assignProvider(em, null, parsed, "api");
        await insertRecord(em, created);
        return { rec: created, parsed };
      }, ({ parsed }) => inference.putProvider(parsed));
      logger.info({ provider: name }, "provider created");
      await modelLists.refetch(name);
      return { provider: messageOf(rec) };
    },

    async updateProvider(req) {
      const paths = req.updateMask?.paths ?? [];
      const { rec } = await writeEntity(store, { kind: "provider", id: req.name }, async (em) => {
        const rec = await getRecord(em, req.name, true);
        if (req.provider === undefined) throw invalidField("provider", "is required");
        const next = wireOf(applyFieldMask(ProviderSchema, messageOf(rec), req.provider, paths, "a provider"));
        delete next["name"];
        delete next["provider"];
        next["keys"] = keepStoredValues(next["keys"] ?? [], rec.keys);
        const parsed = parseProviderWire(rec.name, next, "provider");
        assignProvider(em, rec, parsed, rec.source);
        await writeRecord(em, rec);
        return { rec, parsed };
      }, ({ parsed }) => inference.putProvider(parsed));
      logger.info({ provider: rec.name, fields: paths }, "provider updated");
      await modelLists.refetch(rec.name);
      return { provider: messageOf(rec) };
    },

    async listProviders(_req, ctx) {
      const recs = await emOf(ctx, store).find(ProviderRecord, {}, { orderBy: { name: "asc" } });
      return { providers: recs.map(messageOf) };
    },

    async getProvider(req, ctx) {
      return { provider: messageOf(await getRecord(emOf(ctx, store), req.name)) };
    },

    async deleteProvider(req) {
      const rec = await writeEntity(store, { kind: "provider", id: req.name }, async (em) => {
        const found = await getRecord(em, req.name, true);
        await deleteRecord(em, found);
        return found;
      }, (found) => inference.removeProvider(found.name));
      logger.info({ provider: rec.name }, "provider deleted");
      return { status: "success" };
    },

    async refetchModels(req, ctx) {
      const rec = await getRecord(emOf(ctx, store), req.name);
      const count = await modelLists.refetch(rec.name);
      if (count === null) {
        throw new GatewayError("unavailable", `could not list the models of provider "${rec.name}"; the gateway log has the upstream error`, { type: "provider_list_models_failed" });
      }
      return { status: "success", modelsCount: count };
    },

    async clearModels(req, ctx) {
      const rec = await getRecord(emOf(ctx, store), req.name);
      await modelLists.clear(rec.name);
      return { status: "success" };
    },
  };
}
