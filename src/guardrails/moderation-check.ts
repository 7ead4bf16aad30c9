/**
 * The `moderation` check: the texts go to an OpenAI-compatible `POST /v1/moderations` at the configured
 * provider's base URL (OpenAI's own when it is the built-in `openai` without one), with the provider's first
 * key that serves the model; every category of a flagged result is a finding.
 */
import type { JsonObject } from "../providers/types.js";
import { OPENAI_BASE_URL } from "../providers/openai/adapter.js";
import { joinUrl } from "../providers/http/upstream-http.js";
import { keyAllowsModel } from "../routing/allowed-models.js";
import { GuardrailCheckError, malformedAnswer } from "./check-failure.js";
import type { CallOutFinding, CallOutRequest, CheckProviders } from "./call-out.js";
import { postJson } from "./call-out-http.js";
import type { GuardrailCheck, GuardrailDefinition } from "./definition.js";

type ModerationCheck = Extract<GuardrailCheck, { type: "moderation" }>;

/** The kind of a flagged result that names no category. */
const FLAGGED = "moderation";

/** The base URL moderation calls go to: the configured one, else OpenAI's for the built-in provider. */
function baseUrlOf(name: string, configured: string | null | undefined): string {
  if (configured) return configured;
  if (name === "openai") return OPENAI_BASE_URL;
  throw new GuardrailCheckError(
    "guardrail_check_unavailable",
    `provider "${name}" has no OpenAI-compatible moderation endpoint the gateway knows of; set its network_config.base_url to one`,
  );
}

/** Asks the guardrail's provider to moderate the texts. */
export async function runModerationCheck(providers: CheckProviders, guardrail: GuardrailDefinition, check: ModerationCheck, request: CallOutRequest): Promise<CallOutFinding | null> {
  const service = `the moderation endpoint of provider "${check.provider}"`;
  const provider = providers.providers.get(check.provider);
  if (provider === undefined) throw new GuardrailCheckError("guardrail_check_unavailable", `provider "${check.provider}" of the moderation check is not configured`);
  const key = provider.keys.find((candidate) => keyAllowsModel(candidate, check.model)) ?? provider.keys[0];
  if (key === undefined) throw new GuardrailCheckError("guardrail_check_unavailable", `provider "${check.provider}" has no key for the moderation check`);
  const url = joinUrl(baseUrlOf(check.provider, provider.baseUrl), "/v1/moderations");
  const headers: Record<string, string> = key.value ? { authorization: `Bearer ${key.value}` } : {};
  const answer = await postJson({ url, headers, body: { model: check.model, input: [...request.texts] }, service, signal: request.signal, timeoutMs: guardrail.timeoutMs, maxBytes: provider.maxResponseBytes });
  return readModeration(answer, service);
}

/** The finding of a moderation answer: the categories of every flagged result, or null when none is flagged. */
export function readModeration(answer: JsonObject, service: string): CallOutFinding | null {
  const results = answer["results"];
  if (!Array.isArray(results)) throw malformedAnswer(service, `without a "results" list`);
  const kinds = new Set<string>();
  for (const result of results) {
    if (result === null || typeof result !== "object" || Array.isArray(result)) throw malformedAnswer(service, `a result that is not an object`);
    const { flagged, categories } = result as JsonObject;
    if (typeof flagged !== "boolean") throw malformedAnswer(service, `a result without a boolean "flagged"`);
    if (!flagged) continue;
    let named = false;
    if (categories !== null && typeof categories === "object" && !Array.isArray(categories)) {
      for (const [category, value] of Object.entries(categories)) {
        if (value !== true) continue;
        kinds.add(category);
        named = true;
      }
    }
    if (!named) kinds.add(FLAGGED);
  }
  return kinds.size === 0 ? null : { kinds: [...kinds], summary: null, reason: "", redacted: null };
}
