/**
 * The contract of the checks that call out to a service (webhook, moderation, llm_judge): what one is
 * asked, what it may find, the providers the moderation check reaches, and the way the judge check reaches
 * its model (the inference engine, injected by the wiring: this module knows nothing of it). The runner
 * gives each call its own cancellation, aborted at the guardrail's timeout or when the caller goes away.
 */
import type { AbortSource } from "../cancellation.js";
import type { ChatRequest, JsonObject, ProviderKey } from "../providers/types.js";
import type { GuardrailDefinition, GuardrailStage } from "./definition.js";

/** Who the content is for, as a service may be told: identifiers only, never a credential. */
export interface CallOutMetadata {
  /** The caller's virtual key id; "" without one. */
  virtualKeyId: string;
  /** The model the request named ("" at a tool stage). */
  model: string;
  /** At a tool stage: the MCP client's name and the tool's (without the client prefix). */
  tool?: { mcpClient: string; name: string };
}

/** One check of one stage's content. */
export interface CallOutRequest {
  stage: GuardrailStage;
  /** The texts of the content, in the order its walk visits them. */
  texts: readonly string[];
  metadata: CallOutMetadata;
  /** Aborted at the guardrail's timeout or when the caller goes away; the call must stop then. */
  signal: AbortSource;
}

/** What a service flagged. */
export interface CallOutFinding {
  /** What was found, e.g. the moderation categories flagged; `webhook` or `llm_judge` for a service's own verdict. */
  kinds: readonly string[];
  /** How a block's message describes it, when not by its kinds ("the webhook refused it"). */
  summary: string | null;
  /** The service's own reason, for the caller's message; "" when it gave none. */
  reason: string;
  /** The texts with what was found rewritten (a webhook's redaction), as many as were sent; null otherwise. */
  redacted: readonly string[] | null;
}

/** Runs a guardrail's check that calls out: null when the service found nothing; throws when it gave no usable answer. */
export type CallOut = (guardrail: GuardrailDefinition, request: CallOutRequest) => Promise<CallOutFinding | null>;

/** A configured provider, as the moderation check uses it (the inference state's providers fit). */
export interface CheckProvider {
  readonly keys: readonly ProviderKey[];
  /** network_config.base_url; null or absent: the adapter's default. */
  readonly baseUrl?: string | null;
  readonly maxResponseBytes: number;
}

/**
 * The configured providers, read per call so a changed provider is used at once: the moderation check calls
 * one, the judge check makes sure its provider is still configured before asking the engine.
 */
export interface CheckProviders {
  readonly providers: ReadonlyMap<string, CheckProvider>;
}

/**
 * Sends a judge check's chat completion (`model` is `provider/model`) through the gateway's own routing, as
 * the gateway's own call: no virtual key, and no guardrail stage (a judge checked by guardrails could recurse
 * into itself). Answers the completion's JSON; rejects as the engine does (a routing or provider error).
 * `signal` is the check's own cancellation: the call stops when it aborts.
 */
export type JudgeModel = (request: ChatRequest, signal: AbortSource) => Promise<JsonObject>;
