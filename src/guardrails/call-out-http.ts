/**
 * JSON POSTs for the checks that call out (webhooks, moderation endpoints): one keep-alive agent whose every
 * connection obeys the egress policy, the URL's host judged by the policy again at call time, and the
 * answer read whole up to a size cap, bounded by the call's timeout and cancellation. Every failure leaves
 * as a GuardrailCheckError.
 */
import type { Agent } from "undici";
import type { AbortSource } from "../cancellation.js";
import { egressAgent } from "../config/egress-connections.js";
import { egressPolicy, type EgressPolicy } from "../config/egress-policy.js";
import { DEFAULT_MAX_RESPONSE_BYTES, sendJson } from "../providers/http/upstream-http.js";
import type { JsonObject } from "../providers/types.js";
import { checkFailure, GuardrailCheckError } from "./check-failure.js";

/** One POST. */
export interface CallOutPost {
  url: string;
  headers: Record<string, string>;
  body: JsonObject;
  /** Names the service in errors, e.g. `the webhook at https://hooks.example.com`. */
  service: string;
  signal: AbortSource;
  timeoutMs: number;
  /** The most bytes of answer read; default 16 MiB. */
  maxBytes?: number;
}

/** The agent and the policy its connections were judged by: a newly installed policy gets a fresh agent. */
let shared: { policy: EgressPolicy; agent: Agent } | undefined;

function agent(): Agent {
  const policy = egressPolicy();
  if (shared?.policy !== policy) {
    void shared?.agent.close().catch(() => undefined);
    shared = { policy, agent: egressAgent({ keepAliveTimeout: 30_000 }) };
  }
  return shared.agent;
}

/** Posts `call.body` and answers the JSON object the service sent back. */
export async function postJson(call: CallOutPost): Promise<JsonObject> {
  // The URL was judged when the guardrail was saved; the policy in force now is the one that counts.
  const refused = egressPolicy().urlRefusal(call.url);
  if (refused !== null) throw new GuardrailCheckError("guardrail_check_egress_denied", `${call.service} is refused by the egress policy: ${refused}`);
  try {
    const answer = await sendJson(agent(), call.service, {
      method: "POST",
      url: call.url,
      headers: call.headers,
      body: call.body,
      signal: call.signal,
      timeoutMs: call.timeoutMs,
      idleTimeoutMs: call.timeoutMs,
      maxResponseBytes: call.maxBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    });
    return answer.body;
  } catch (err) {
    // An abort's reason is the runner's own (a timeout) or the caller's, which the runner tells apart.
    if (call.signal.aborted) throw call.signal.reason;
    throw checkFailure(err, call.service);
  }
}

/** How errors and logs name a URL: its origin and path, never a query that may carry a token. */
export function serviceUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "an unparsable URL";
  }
}
