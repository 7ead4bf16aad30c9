/**
 * Guardrails against the store and the running gateway: what a parsed guardrail names must exist (its
 * scope's owner, the provider of a moderation or judge check), its webhook must be a destination the
 * egress policy permits, and its name must be free. Also writes records and loads them into memory.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { egressPolicy } from "../../config/egress-policy.js";
import { GatewayError, invalidField } from "../../errors.js";
import { GovernanceGroupRecord, GuardrailRecord, McpClientRecord, ProviderRecord, VirtualKeyRecord, type Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import type { GuardrailDefinition } from "../../guardrails/definition.js";
import type { GuardrailSet } from "../../guardrails/guardrail-set.js";
import { parseStoredGuardrail, type GuardrailFields, type ParsedGuardrail } from "./guardrail-input.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The provider a check calls, or "" for checks that call none. */
function providerOf(parsed: ParsedGuardrail): string {
  const check = parsed.guardrail.check;
  return check.type === "moderation" || check.type === "llm_judge" ? check.provider : "";
}

/** The id of the scope's owner, or a 400 naming `scope_id` when there is none. An MCP client may be named by its name. */
async function ownerId(em: EntityManager, parsed: ParsedGuardrail, at: (field: string) => string): Promise<string> {
  const { scope, scopeId } = parsed.fields;
  switch (scope) {
    case "virtual_key":
      if (await em.findOne(VirtualKeyRecord, { id: scopeId })) return scopeId;
      throw invalidField(at("scope_id"), `names no virtual key: "${scopeId}" does not exist`);
    case "team":
    case "customer":
      if (await em.findOne(GovernanceGroupRecord, { id: scopeId, kind: scope })) return scopeId;
      throw invalidField(at("scope_id"), `names no ${scope}: "${scopeId}" does not exist`);
    case "mcp_client": {
      // Client ids are UUIDs: anything else can only be a name (and must not reach the uuid column).
      const byId = UUID.test(scopeId) ? await em.findOne(McpClientRecord, { id: scopeId.toLowerCase() }) : null;
      const client = byId ?? (await em.findOne(McpClientRecord, { name: scopeId }));
      if (client) return client.id;
      throw invalidField(at("scope_id"), `names no MCP client: no client has the id or name "${scopeId}"`);
    }
    default:
      return scopeId;
  }
}

/**
 * Checks what a guardrail needs from the store and the running gateway, and returns it with an MCP client
 * named by its name pinned to the client's id. `previous` is the stored guardrail an update changes: a
 * scope or provider it keeps is not looked up again, so a read sent back as an update still works after
 * its owner went away. `at` turns a field name into the path a 400 names.
 */
export async function resolveGuardrailReferences(
  em: EntityManager,
  parsed: ParsedGuardrail,
  at: (field: string) => string,
  previous: Pick<GuardrailFields, "scope" | "scopeId" | "check"> | null = null,
): Promise<ParsedGuardrail> {
  const { id, name, scope, scopeId } = parsed.fields;
  const clash = await em.findOne(GuardrailRecord, { name, id: { $ne: id } });
  if (clash) throw new GatewayError("already_exists", `${at("name")}: guardrail "${clash.id}" is already named "${name}"; names are unique`, { field: at("name") });
  const check = parsed.guardrail.check;
  if (check.type === "webhook") egressPolicy().checkUrl(check.url, at("check.webhook.url"));
  const provider = providerOf(parsed);
  const previousProvider = previous === null ? "" : String((previous.check[String(previous.check["type"])] as Record<string, unknown> | undefined)?.["provider"] ?? "");
  if (provider !== "" && provider !== previousProvider && !(await em.findOne(ProviderRecord, { name: provider }))) {
    throw invalidField(at(`check.${check.type}.provider`), `names no configured provider: "${provider}" does not exist; add it under /api/v1/providers or in the config file's providers`);
  }
  if (scope === "global" || (previous !== null && previous.scope === scope && previous.scopeId === scopeId)) return parsed;
  const owner = await ownerId(em, parsed, at);
  if (owner === scopeId) return parsed;
  return { guardrail: { ...parsed.guardrail, scopeId: owner }, fields: { ...parsed.fields, scopeId: owner } };
}

/** Writes a checked guardrail onto a record (a new one when `existing` is null). */
export function assignGuardrail(em: EntityManager, existing: GuardrailRecord | null, parsed: ParsedGuardrail, source: "api" | "config"): GuardrailRecord {
  if (existing === null) return em.create(GuardrailRecord, { ...parsed.fields, source });
  Object.assign(existing, parsed.fields);
  return existing;
}

/** A stored guardrail compiled again; null (and logged) when it no longer passes validation. */
function storedGuardrail(rec: GuardrailRecord, logger: Logger): GuardrailDefinition | null {
  try {
    return parseStoredGuardrail(rec).guardrail;
  } catch (err) {
    logger.error({ err, guardrail_id: rec.id, guardrail: rec.name }, "stored guardrail no longer passes validation; it does not run until fixed through the API");
    return null;
  }
}

/** Loads every stored guardrail into `set`, compiling each again (boot, config reload, a lost change listener). */
export async function loadGuardrails(store: Store, set: GuardrailSet, logger: Logger): Promise<void> {
  const guardrails: GuardrailDefinition[] = [];
  for (const rec of await store.fork().find(GuardrailRecord, {}, { orderBy: { id: "asc" } })) {
    const guardrail = storedGuardrail(rec, logger);
    if (guardrail !== null) guardrails.push(guardrail);
  }
  set.replaceAll(guardrails);
}

/** Reads one guardrail back into `set` (another node's change): put as stored, or removed when gone or no longer valid. */
export async function reloadGuardrail(store: Store, set: GuardrailSet, logger: Logger, id: string): Promise<void> {
  const rec = await store.fork().findOne(GuardrailRecord, { id });
  const guardrail = rec === null ? null : storedGuardrail(rec, logger);
  if (guardrail === null) set.remove(id);
  else set.put(guardrail);
}
