/**
 * The `webhook` check: the content goes to the operator's service as `{stage, content, metadata}` and its
 * answer `{action: allow | block | redact, redacted?, reason?}` is the verdict. `redacted` (one text for each
 * text sent, in order) is required when the guardrail redacts and the service answers redact; an answer
 * the check cannot read counts as a failed check, so on_error decides.
 */
import type { JsonObject } from "../providers/types.js";
import { upstreamText } from "../providers/provider-error.js";
import { malformedAnswer } from "./check-failure.js";
import type { CallOutFinding, CallOutRequest } from "./call-out.js";
import { postJson, serviceUrl } from "./call-out-http.js";
import type { GuardrailCheck, GuardrailDefinition } from "./definition.js";

type WebhookCheck = Extract<GuardrailCheck, { type: "webhook" }>;

/** The longest reason passed on to the caller. */
const MAX_REASON = 200;

/** The body a webhook receives. */
export function webhookBody(guardrail: GuardrailDefinition, request: CallOutRequest): JsonObject {
  const { tool } = request.metadata;
  return {
    stage: request.stage,
    content: request.texts,
    metadata: {
      guardrail_id: guardrail.id,
      guardrail_name: guardrail.name,
      virtual_key_id: request.metadata.virtualKeyId,
      model: request.metadata.model,
      ...(tool !== undefined ? { mcp_client: tool.mcpClient, tool: tool.name } : {}),
    },
  };
}

/** Calls the guardrail's webhook with the content. */
export async function runWebhookCheck(guardrail: GuardrailDefinition, check: WebhookCheck, request: CallOutRequest): Promise<CallOutFinding | null> {
  const service = `the webhook at ${serviceUrl(check.url)}`;
  const headers: Record<string, string> = {};
  // The request sets content-type in lower case: a configured `Content-Type` must replace it, not join it.
  for (const [name, value] of Object.entries(check.headers)) headers[name.toLowerCase()] = value;
  const answer = await postJson({ url: check.url, headers, body: webhookBody(guardrail, request), service, signal: request.signal, timeoutMs: check.timeoutMs });
  return readWebhookAnswer(answer, request.texts.length, guardrail.action === "redact", service);
}

/**
 * The finding of a webhook's answer, null for `allow`. `redacts`: the guardrail's action is redact, so a
 * `redact` answer must carry `redacted`, `count` strings; otherwise `redacted` is not read.
 */
export function readWebhookAnswer(answer: JsonObject, count: number, redacts: boolean, service: string): CallOutFinding | null {
  const action = answer["action"];
  if (action !== "allow" && action !== "block" && action !== "redact") return fail(service, `an "action" that is not "allow", "block" or "redact"`);
  const rawReason = answer["reason"];
  if (rawReason !== undefined && rawReason !== null && typeof rawReason !== "string") return fail(service, `a "reason" that is not a string`);
  if (action === "allow") return null;
  const reason = typeof rawReason === "string" ? upstreamText(rawReason, MAX_REASON) : "";
  const summary = action === "block" ? "the webhook refused it" : "the webhook redacted it";
  if (action === "block" || !redacts) return { kinds: ["webhook"], summary, reason, redacted: null };
  const redacted = answer["redacted"];
  if (!Array.isArray(redacted) || redacted.length !== count || !redacted.every((text) => typeof text === "string")) {
    return fail(service, `"redact" without "redacted" as a list of ${count} string${count === 1 ? "" : "s"}, one for each text sent`);
  }
  return { kinds: ["webhook"], summary, reason, redacted: redacted as string[] };
}

function fail(service: string, problem: string): never {
  throw malformedAnswer(service, problem);
}
