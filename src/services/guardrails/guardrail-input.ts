/**
 * A guardrail as the admin API and the config file give it (gw.admin.v1.Guardrail), checked once: every
 * field, every default applied, the `when` condition compiled and the check's settings compiled, so a
 * guardrail that is stored always runs. A setting the gateway does not act on is refused, never stored.
 * What needs the store or the running gateway (owners, providers, the egress policy, unique names) is
 * checked by guardrail-records.ts.
 */
import { create, type DescEnum } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { GatewayError, invalidField } from "../../errors.js";
import type { ContentCheck, ContentCheckConfig } from "../../guardrails/check-types.js";
import { compileContentCheck } from "../../guardrails/compile-check.js";
import { durationField } from "../../config/duration.js";
import { checkHeaderValue } from "../../config/wire-fields.js";
import { compileConditionOver } from "../../routing/cel-expression.js";
import { enumInputNumber, enumNumberRestName } from "../../proto-json/enum-names.js";
import { messageFromJson } from "../../proto-json/message-from-json.js";
import type { GuardrailRecord } from "../../store/index.js";
import {
  GuardrailActionSchema,
  GuardrailCheckSchema,
  GuardrailCheckTypeSchema,
  GuardrailOnErrorSchema,
  GuardrailSchema,
  GuardrailScopeSchema,
  GuardrailStageSchema,
  PiiEntitySchema,
  RedactionStrategySchema,
  type Guardrail as GuardrailMessage,
  type GuardrailCheck as GuardrailCheckMessage,
} from "../../../gen/gw/admin/v1/guardrail_pb.js";
import {
  GUARDRAIL_CONDITION_VARIABLES,
  REDACTABLE_CHECKS,
  type GuardrailAction,
  type GuardrailCheck,
  type GuardrailCheckType,
  type GuardrailDefinition,
  type GuardrailRedaction,
  type GuardrailScope,
  type GuardrailStage,
  type PiiEntity,
} from "../../guardrails/definition.js";

/** What reads show in place of a webhook header value; sent back, it keeps the stored value. */
export const REDACTED = "<redacted>";

/** The stored columns of a guardrail, besides its bookkeeping. */
export type GuardrailFields = Pick<
  GuardrailRecord,
  "id" | "name" | "description" | "enabled" | "stages" | "scope" | "scopeId" | "whenExpression" | "check" | "secretHeaders" | "action" | "redaction" | "onError" | "timeout" | "samplingRate"
>;

/** A checked guardrail: the form the request path runs and the columns to store. */
export interface ParsedGuardrail {
  guardrail: GuardrailDefinition;
  fields: GuardrailFields;
}

/** The id and name columns hold at most this many characters. */
const MAX_TEXT = 255;
const DEFAULT_TIMEOUT = "2s";
const MIN_TIMEOUT_MS = 1;
const MAX_TIMEOUT = "60s";
const DEFAULT_REPLACEMENT = "[REDACTED:<kind>]";
/** A header name as HTTP allows it (a token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The oneof case of each check type's settings. */
const SETTINGS_CASE: Record<GuardrailCheckType, NonNullable<GuardrailCheckMessage["settings"]["case"]>> = {
  pii: "pii",
  secrets: "secrets",
  regex: "regex",
  keywords: "keywords",
  prompt_injection: "promptInjection",
  moderation: "moderation",
  llm_judge: "llmJudge",
  webhook: "webhook",
};

/** The check type whose settings a oneof case holds (the field's name). */
const TYPE_OF_CASE = new Map(Object.entries(SETTINGS_CASE).map(([type, name]) => [name, type as GuardrailCheckType]));

/** The REST names an enum accepts, for messages. */
function choices(desc: DescEnum): string {
  return desc.values.filter((v) => v.number !== 0).map((v) => enumNumberRestName(desc, v.number)).join(", ");
}

/** The REST name of an enum value a client may send, or null for 0 and for numbers the enum does not declare. */
function known(desc: DescEnum, value: number): string | null {
  return value === 0 ? null : (enumNumberRestName(desc, value) ?? null);
}

function bounded(value: string, path: string, hint: string): string {
  if (value.trim() === "") throw invalidField(path, `is required: ${hint}`);
  if (value.length > MAX_TEXT) throw invalidField(path, `is ${value.length} characters long; use at most ${MAX_TEXT}`);
  return value;
}

function required(value: string, path: string, hint: string): string {
  if (value.trim() === "") throw invalidField(path, `is required: ${hint}`);
  return value;
}

function stagesOf(values: readonly number[], path: string): GuardrailStage[] {
  if (values.length === 0) throw invalidField(path, `needs at least one stage: ${choices(GuardrailStageSchema)}`);
  const stages: GuardrailStage[] = [];
  values.forEach((value, index) => {
    const stage = known(GuardrailStageSchema, value) as GuardrailStage | null;
    if (stage === null) throw invalidField(`${path}[${index}]`, `must be one of ${choices(GuardrailStageSchema)}`);
    if (stages.includes(stage)) throw invalidField(`${path}[${index}]`, `"${stage}" is listed twice`);
    stages.push(stage);
  });
  return stages;
}

/** The check's settings, compiled; `at` gives the path of a field under `check`. */
function checkOf(msg: GuardrailCheckMessage | undefined, at: (field: string) => string, storedHeaders: Readonly<Record<string, string>> | null, timeoutMs: number): GuardrailCheck {
  if (msg === undefined) throw invalidField(at(""), `is required: {"type": ${choices(GuardrailCheckTypeSchema)}, ...}`);
  const type = known(GuardrailCheckTypeSchema, msg.type) as GuardrailCheckType | null;
  if (type === null) throw invalidField(at("type"), `is required: one of ${choices(GuardrailCheckTypeSchema)}`);
  const settings = msg.settings;
  if (settings.case !== undefined && settings.case !== SETTINGS_CASE[type]) {
    const other = TYPE_OF_CASE.get(settings.case) ?? settings.case;
    throw invalidField(at(other), `is the setting of a ${other} check, but check.type is ${type}; put the settings in check.${type}`);
  }
  const path = (field: string): string => at(`${type}.${field}`);
  switch (type) {
    case "pii": {
      const values = settings.case === "pii" ? settings.value.entities : [];
      const entities: PiiEntity[] = [];
      values.forEach((value, index) => {
        const entity = known(PiiEntitySchema, value) as PiiEntity | null;
        if (entity === null) throw invalidField(`${path("entities")}[${index}]`, `must be one of ${choices(PiiEntitySchema)}`);
        if (entities.includes(entity)) throw invalidField(`${path("entities")}[${index}]`, `"${entity}" is listed twice`);
        entities.push(entity);
      });
      return { type, entities };
    }
    case "secrets":
    case "prompt_injection":
      return { type };
    // The patterns and words themselves are checked by the check's compiler (contentCheckOf).
    case "regex":
      return settings.case === "regex" ? { type, patterns: [...settings.value.patterns], caseInsensitive: settings.value.caseInsensitive } : { type, patterns: [], caseInsensitive: false };
    case "keywords":
      return { type, words: settings.case === "keywords" ? [...settings.value.words] : [] };
    case "moderation": {
      const value = settings.case === "moderation" ? settings.value : { provider: "", model: "" };
      const provider = bounded(value.provider, path("provider"), "a configured provider, e.g. \"openai\"");
      const model = bounded(value.model, path("model"), "a moderation model of that provider, e.g. \"omni-moderation-latest\"");
      return { type, provider, model };
    }
    case "llm_judge": {
      const value = settings.case === "llmJudge" ? settings.value : { provider: "", model: "", instructions: "" };
      const provider = bounded(value.provider, path("provider"), "a configured provider, e.g. \"openai\"");
      const model = bounded(value.model, path("model"), "a model of that provider");
      const instructions = required(value.instructions, path("instructions"), "what the model should allow and refuse");
      return { type, provider, model, instructions };
    }
    case "webhook": {
      const value = settings.case === "webhook" ? settings.value : { url: "", headers: {}, timeout: "" };
      const url = webhookUrl(value.url, path("url"));
      const headers = webhookHeaders(value.headers, path("headers"), storedHeaders);
      const callMs = value.timeout === "" ? timeoutMs : guardrailTimeout(value.timeout, path("timeout"));
      if (callMs > timeoutMs) throw invalidField(path("timeout"), `is longer than the guardrail's timeout, which would end the check first; use at most that (or leave it empty to use it)`);
      return { type, url, headers, timeoutMs: callMs };
    }
  }
}

/** The compiled built-in check of an in-process check type, or null for the checks that call out; a bad setting is a 400 naming it. */
function contentCheckOf(check: GuardrailCheck, at: (field: string) => string): ContentCheck | null {
  let config: ContentCheckConfig;
  switch (check.type) {
    case "pii":
      // An empty list is how the API says "every entity": the compiler's "left out".
      config = check.entities.length === 0 ? { type: check.type } : { type: check.type, entities: check.entities };
      break;
    case "secrets":
    case "prompt_injection":
      config = { type: check.type };
      break;
    case "regex":
      config = { type: check.type, patterns: check.patterns, case_insensitive: check.caseInsensitive };
      break;
    case "keywords":
      config = { type: check.type, words: check.words };
      break;
    default:
      return null;
  }
  return compileContentCheck(config, at(`check.${check.type}`));
}

function webhookUrl(text: string, path: string): string {
  required(text, path, "the http(s) URL the content is sent to");
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw invalidField(path, "must be an http:// or https:// URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw invalidField(path, "must be an http:// or https:// URL");
  return text;
}

/** The header values to send; a value read back as "<redacted>" is the one stored under its name. */
function webhookHeaders(given: Readonly<Record<string, string>>, path: string, stored: Readonly<Record<string, string>> | null): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    const at = `${path}[${JSON.stringify(name)}]`;
    if (!HEADER_NAME.test(name)) throw invalidField(at, "is not a valid header name");
    checkHeaderValue(value, at);
    if (value === REDACTED) {
      const kept = stored?.[name];
      if (kept === undefined) throw invalidField(at, `is "${REDACTED}" but no value is stored under this name; send the value`);
      headers[name] = kept;
    } else {
      headers[name] = value;
    }
  }
  return headers;
}

/** A timeout between 1ms and 60s, in milliseconds. */
function guardrailTimeout(text: string, path: string): number {
  const ms = durationField(text, path, { example: DEFAULT_TIMEOUT, sign: "positive", max: MAX_TIMEOUT });
  if (ms < MIN_TIMEOUT_MS) throw invalidField(path, `must be at least ${MIN_TIMEOUT_MS}ms (got "${text}")`);
  return ms;
}

function redactionOf(msg: GuardrailMessage, action: GuardrailAction, at: (field: string) => string): GuardrailRedaction | null {
  const given = msg.redaction;
  if (action !== "redact") {
    if (given !== undefined) throw invalidField(at("redaction"), `applies only to action "redact" (this guardrail's action is "${action}"); leave it out`);
    return null;
  }
  const strategy = given === undefined || given.strategy === 0 ? "replace" : (known(RedactionStrategySchema, given.strategy) as GuardrailRedaction["strategy"] | null);
  if (strategy === null) throw invalidField(at("redaction.strategy"), `must be one of ${choices(RedactionStrategySchema)}`);
  const replacement = given?.replacement ?? "";
  if (strategy !== "replace") {
    if (replacement !== "") throw invalidField(at("redaction.replacement"), `applies only to strategy "replace" (this redaction's strategy is "${strategy}"); leave it empty`);
    return { strategy, replacement: "" };
  }
  return { strategy, replacement: replacement === "" ? DEFAULT_REPLACEMENT : replacement };
}

/** The stored JSON of a check, in the API's JSON form; a webhook's header values are stored apart, encrypted. */
function storedCheck(check: GuardrailCheck, webhookTimeout: string): Record<string, unknown> {
  switch (check.type) {
    case "pii":
      return { type: check.type, pii: { entities: [...check.entities] } };
    case "secrets":
    case "prompt_injection":
      return { type: check.type, [check.type]: {} };
    case "regex":
      return { type: check.type, regex: { patterns: [...check.patterns], case_insensitive: check.caseInsensitive } };
    case "keywords":
      return { type: check.type, keywords: { words: [...check.words] } };
    case "moderation":
      return { type: check.type, moderation: { provider: check.provider, model: check.model } };
    case "llm_judge":
      return { type: check.type, llm_judge: { provider: check.provider, model: check.model, instructions: check.instructions } };
    case "webhook":
      return { type: check.type, webhook: { url: check.url, timeout: webhookTimeout } };
  }
}

/**
 * Checks a guardrail and compiles it. `at` turns a field name into the path a 400 names (the API passes
 * the bare name, the config file its entry's path). `storedHeaders` are the webhook header values kept for
 * this guardrail, which a value sent back as "<redacted>" keeps.
 */
export function parseGuardrail(msg: GuardrailMessage, at: (field: string) => string, storedHeaders: Readonly<Record<string, string>> | null = null): ParsedGuardrail {
  const id = bounded(msg.id, at("id"), "a unique id for the guardrail");
  const name = bounded(msg.name, at("name"), "a name, unique among guardrails");
  const stages = stagesOf(msg.stages, at("stages"));
  const scope: GuardrailScope | null = msg.scope === 0 ? "global" : (known(GuardrailScopeSchema, msg.scope) as GuardrailScope | null);
  if (scope === null) throw invalidField(at("scope"), `must be one of ${choices(GuardrailScopeSchema)}`);
  const scopeId = msg.scopeId.trim();
  if (scope === "global" && scopeId !== "") throw invalidField(at("scope_id"), "must be empty for a global guardrail; set scope to customer, team, virtual_key or mcp_client");
  if (scope !== "global") bounded(scopeId, at("scope_id"), `the id of the ${scope.replace("_", " ")} the guardrail applies to`);
  const condition = msg.when.trim() === "" ? null : compileConditionOver(GUARDRAIL_CONDITION_VARIABLES, msg.when, at("when"));
  const timeout = msg.timeout === "" ? DEFAULT_TIMEOUT : msg.timeout;
  const timeoutMs = guardrailTimeout(timeout, at("timeout"));
  const check = checkOf(msg.check, (field) => (field === "" ? at("check") : at(`check.${field}`)), storedHeaders, timeoutMs);
  const content = contentCheckOf(check, at);
  const action = known(GuardrailActionSchema, msg.action) as GuardrailAction | null;
  if (action === null) throw invalidField(at("action"), `is required: one of ${choices(GuardrailActionSchema)}`);
  if (action === "redact" && !REDACTABLE_CHECKS.has(check.type)) {
    throw invalidField(at("action"), `"redact" is valid for ${[...REDACTABLE_CHECKS].join(", ")} checks only; a ${check.type} check can block or warn`);
  }
  const redaction = redactionOf(msg, action, at);
  const onError = msg.onError === 0 ? "block" : (known(GuardrailOnErrorSchema, msg.onError) as "allow" | "block" | null);
  if (onError === null) throw invalidField(at("on_error"), `must be one of ${choices(GuardrailOnErrorSchema)}`);
  const samplingRate = msg.samplingRate ?? 1;
  if (!(Number.isFinite(samplingRate) && samplingRate >= 0 && samplingRate <= 1)) throw invalidField(at("sampling_rate"), `must be a number from 0 to 1, got ${samplingRate}`);
  const enabled = msg.enabled ?? true;
  const webhookTimeout = msg.check?.settings.case === "webhook" ? msg.check.settings.value.timeout : "";
  return {
    guardrail: { id, name, enabled, stages: new Set(stages), scope, scopeId, condition, check, content, action, redaction, onError, timeoutMs, samplingRate },
    fields: {
      id,
      name,
      description: msg.description,
      enabled,
      stages,
      scope,
      scopeId,
      whenExpression: msg.when,
      check: storedCheck(check, webhookTimeout),
      secretHeaders: check.type === "webhook" ? { ...check.headers } : null,
      action,
      redaction,
      onError,
      timeout,
      samplingRate,
    },
  };
}

/** A guardrail from its REST JSON (the config file's form), read exactly as the API reads a body; `path` prefixes a 400's field. */
export function guardrailFromJson(json: unknown, path: string): GuardrailMessage {
  try {
    return messageFromJson(GuardrailSchema, json, "", {}).message as GuardrailMessage;
  } catch (err) {
    if (err instanceof GatewayError && err.field !== undefined) throw invalidField(`${path}.${err.field}`, err.message.replace(/^[^:]*: /, ""));
    throw err;
  }
}

/** The API message of a stored guardrail: webhook header values as "<redacted>" unless `withSecrets`. */
export function guardrailMessageOf(rec: GuardrailRecord, withSecrets = false): GuardrailMessage {
  const check = messageFromJson(GuardrailCheckSchema, rec.check, "check", {}).message as GuardrailCheckMessage;
  if (check.settings.case === "webhook") {
    const headers = rec.secretHeaders ?? {};
    check.settings.value.headers = Object.fromEntries(Object.keys(headers).map((name) => [name, withSecrets ? (headers[name] as string) : REDACTED]));
  }
  const number = (desc: DescEnum, name: string): number => enumInputNumber(desc, name) ?? 0;
  return create(GuardrailSchema, {
    id: rec.id,
    name: rec.name,
    description: rec.description,
    enabled: rec.enabled,
    stages: rec.stages.map((stage) => number(GuardrailStageSchema, stage)),
    scope: number(GuardrailScopeSchema, rec.scope),
    scopeId: rec.scopeId,
    when: rec.whenExpression,
    check,
    action: number(GuardrailActionSchema, rec.action),
    ...(rec.redaction !== null ? { redaction: { strategy: number(RedactionStrategySchema, rec.redaction.strategy), replacement: rec.redaction.replacement } } : {}),
    onError: number(GuardrailOnErrorSchema, rec.onError),
    timeout: rec.timeout,
    samplingRate: rec.samplingRate,
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
  });
}

/** Parses a stored guardrail again (boot load, reload), compiling its condition and check. */
export function parseStoredGuardrail(rec: GuardrailRecord): ParsedGuardrail {
  return parseGuardrail(guardrailMessageOf(rec, true), (field) => field, rec.secretHeaders);
}
