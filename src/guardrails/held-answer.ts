/**
 * The bound on a streamed answer held whole for a check that calls out. A service can only judge an answer
 * it has whole, so the output stage keeps every event of such a stream until the upstream ends; without a
 * bound, what it keeps would grow with whatever the upstream (or a translation of its events) sends. What is
 * held is counted as the events would go out to the caller, against the answering provider's
 * max_response_bytes, the bound the rest of the engine puts on one answer.
 *
 * An answer past the bound was never judged, and never will be: the stream ends with the block's error
 * event, carrying its own code, whatever the guardrails' on_error says. Letting it through under
 * `on_error: allow` would release content no check has seen, which a failed check never does either (a
 * failed check's content was at least complete and could have been judged).
 */
import { rawTextOf } from "../providers/raw-event.js";
import type { JsonObject } from "../providers/types.js";
import type { GuardrailDefinition } from "./definition.js";
import { GuardrailBlockedError } from "./guardrail-blocked.js";
import { callsOut, spanFacts, type RunContext } from "./guardrail-run.js";

/** The `code` of the error event that ends a held answer past its bound. */
export const HELD_TOO_LARGE = "guardrail_output_too_large";

/** The bytes `event` takes as it goes out: the text it arrived as while unchanged, else its JSON. */
export function heldEventBytes(event: JsonObject): number {
  return Buffer.byteLength(rawTextOf(event) ?? JSON.stringify(event));
}

/** What a held stream keeps, counted against its bound. */
export class HeldBytes {
  #held = 0;

  /** `limit`: the most bytes of events the stream may hold. */
  constructor(readonly limit: number) {}

  /** The bytes of events held so far. */
  get held(): number {
    return this.#held;
  }

  /** Counts `event` in; false once what is held passes the limit. */
  add(event: JsonObject): boolean {
    this.#held += heldEventBytes(event);
    return this.#held <= this.limit;
  }
}

/**
 * The block that ends a held answer past `limit` bytes. It names the first guardrail that calls out (the
 * reason the answer was held) and counts every guardrail that was to judge it as `error`, in the metrics
 * and the spans: none of them looked at the content.
 */
export function heldTooLarge(guardrails: readonly GuardrailDefinition[], limit: number, context: RunContext): GuardrailBlockedError {
  for (const guardrail of guardrails) {
    context.trace?.guardrailCheck(spanFacts(guardrail, context.stage)).end("error", HELD_TOO_LARGE);
    context.observer?.checked(guardrail, context.stage, "error", null, context.custom);
  }
  const named = guardrails.find(callsOut) ?? guardrails[0] ?? { id: "", name: "" };
  const found = `the answer held whole for its check passed ${limit} bytes, the provider's max_response_bytes (${HELD_TOO_LARGE})`;
  return new GuardrailBlockedError(named, context.stage, found, `${named.name}=block`, HELD_TOO_LARGE);
}
