/**
 * gw.admin.v1.GuardrailService: guardrails. Every write is checked by the same parser the config file
 * uses, persisted, then applied to the in-memory guardrails the request path reads. Webhook header values
 * are stored encrypted and read back redacted.
 */
import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../errors.js";
import { applyFieldMask } from "../proto-json/field-mask.js";
import { deleteRecord, GuardrailRecord, insertRecord, writeRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { GuardrailAction, GuardrailSchema, GuardrailService, type Guardrail } from "../../gen/gw/admin/v1/guardrail_pb.js";
import { emOf } from "./context.js";
import { FOR_UPDATE, writeEntity } from "./entity-write-lock.js";
import type { GuardrailSet } from "../guardrails/guardrail-set.js";
import { guardrailMessageOf, parseGuardrail } from "./guardrails/guardrail-input.js";
import { assignGuardrail, resolveGuardrailReferences } from "./guardrails/guardrail-records.js";

/** What the guardrail service needs. */
export interface GuardrailServiceDeps {
  store: Store;
  logger: Logger;
  /** The guardrails the request path reads; every write is applied to it. */
  guardrails: GuardrailSet;
}

/** The API names fields as they are; the config file prefixes its entry's path. */
const asIs = (field: string): string => field;

function given(guardrail: Guardrail | undefined): Guardrail {
  if (guardrail === undefined) throw invalidField("guardrail", "is required");
  return guardrail;
}

/** A stored guardrail, or a 404; `forUpdate` locks its row for the write's transaction. */
async function getRecord(em: EntityManager, id: string, forUpdate = false): Promise<GuardrailRecord> {
  if (id.trim() === "") throw invalidField("id", "is required");
  const rec = await em.findOne(GuardrailRecord, { id }, forUpdate ? FOR_UPDATE : {});
  if (!rec) throw new GatewayError("not_found", `guardrail "${id}" does not exist`, { type: "guardrail_not_found" });
  return rec;
}

/** Creates the service implementation. */
export function createGuardrailService(deps: GuardrailServiceDeps): ServiceImpl<typeof GuardrailService> {
  const { store, logger, guardrails } = deps;
  return {
    async createGuardrail(req) {
      const msg = given(req.guardrail);
      if (msg.id === "") msg.id = `gr-${randomUUID()}`;
      const parsed = parseGuardrail(msg, asIs);
      const { rec } = await writeEntity(store, { kind: "guardrail", id: parsed.fields.id }, async (em) => {
        if (await em.findOne(GuardrailRecord, { id: parsed.fields.id })) {
          throw new GatewayError("already_exists", `guardrail "${parsed.fields.id}" already exists`, { field: "id" });
        }
        const resolved = await resolveGuardrailReferences(em, parsed, asIs);
        const created = assignGuardrail(em, null, resolved, "api");
        await insertRecord(em, created);
        return { rec: created, guardrail: resolved.guardrail };
      }, ({ guardrail }) => guardrails.put(guardrail));
      logger.info({ guardrail_id: rec.id, guardrail: rec.name }, "guardrail created");
      return { guardrail: guardrailMessageOf(rec) };
    },

    async listGuardrails(_req, ctx) {
      const recs = await emOf(ctx, store).find(GuardrailRecord, {}, { orderBy: { createdAt: "asc", id: "asc" } });
      return { guardrails: recs.map((rec) => guardrailMessageOf(rec)), count: recs.length };
    },

    async getGuardrail(req, ctx) {
      return { guardrail: guardrailMessageOf(await getRecord(emOf(ctx, store), req.id)) };
    },

    async updateGuardrail(req) {
      const paths = req.updateMask?.paths ?? [];
      const { rec } = await writeEntity(store, { kind: "guardrail", id: req.id }, async (em) => {
        const rec = await getRecord(em, req.id, true);
        const next = applyFieldMask(GuardrailSchema, guardrailMessageOf(rec), given(req.guardrail), paths, "a guardrail");
        // A guardrail moved off redact drops the redaction it had, unless the update itself names one.
        if (next.action !== GuardrailAction.REDACT && !paths.some((path) => path === "redaction" || path.startsWith("redaction."))) next.redaction = undefined;
        const parsed = parseGuardrail(next, asIs, rec.secretHeaders);
        const resolved = await resolveGuardrailReferences(em, parsed, asIs, rec);
        assignGuardrail(em, rec, resolved, rec.source);
        await writeRecord(em, rec);
        return { rec, guardrail: resolved.guardrail };
      }, ({ guardrail }) => guardrails.put(guardrail));
      logger.info({ guardrail_id: rec.id, guardrail: rec.name, fields: paths }, "guardrail updated");
      return { guardrail: guardrailMessageOf(rec) };
    },

    async deleteGuardrail(req) {
      const rec = await writeEntity(store, { kind: "guardrail", id: req.id }, async (em) => {
        const found = await getRecord(em, req.id, true);
        await deleteRecord(em, found);
        return found;
      }, (found) => guardrails.remove(found.id));
      logger.info({ guardrail_id: rec.id, guardrail: rec.name }, "guardrail deleted");
      return { status: "success" };
    },
  };
}
