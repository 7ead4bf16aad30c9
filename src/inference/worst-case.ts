/**
 * The most a request can spend, reserved against its budgets and token limits before the upstream call:
 * its prompt (estimated at four characters a token; the whole request text when the gateway holds it, which
 * bounds the prompt from above without serialising it again) plus the output it allows (`max_tokens`,
 * `max_completion_tokens` or `max_output_tokens`, else the model's `max_output_tokens` from the pricing
 * datasheet, else DEFAULT_OUTPUT_TOKENS), at the target's catalog prices.
 */
import type { WorstCase } from "../routing/hierarchy.js";
import type { PriceTable, PricingMode } from "../routing/pricing.js";
import type { RouteTarget } from "../routing/types.js";

/** Output tokens assumed when neither the request nor the datasheet bounds them. */
export const DEFAULT_OUTPUT_TOKENS = 4096;

/** Characters per token of the prompt estimate. */
const CHARS_PER_TOKEN = 4;

const OUTPUT_FIELDS = ["max_tokens", "max_completion_tokens", "max_output_tokens"] as const;

/** A request's worst-case cost and tokens on `target`. */
export function worstCase(body: Readonly<Record<string, unknown>>, mode: PricingMode, target: RouteTarget, prices: PriceTable, text?: string): WorstCase {
  const chars = text !== undefined && text !== "" ? text.length : promptChars(body);
  const input = Math.ceil(chars / CHARS_PER_TOKEN);
  let output = 0;
  if (mode !== "embedding") {
    const asked = OUTPUT_FIELDS.map((field) => body[field]).find((value): value is number => typeof value === "number" && Number.isFinite(value) && value > 0);
    output = asked ?? prices.maxOutputTokens(target.provider, target.model, mode) ?? DEFAULT_OUTPUT_TOKENS;
  }
  const cost = prices.cost({ provider: target.provider, upstreamModel: target.model, alias: null, mode }, { input_tokens: input, output_tokens: output });
  return { costUsd: cost ?? 0, tokens: input + output };
}

/** The characters of the prompt and the system text as JSON. */
function promptChars(body: Readonly<Record<string, unknown>>): number {
  const prompt = body["messages"] ?? body["input"] ?? "";
  const system = body["system"] ?? body["instructions"] ?? "";
  return (typeof prompt === "string" ? prompt.length : JSON.stringify(prompt).length) + (typeof system === "string" ? system.length : JSON.stringify(system).length);
}

/**
 * The same figures worked out on first read: most keys have no budget or token limit at any level, and
 * their requests then never pay for measuring the prompt or looking up prices.
 */
export function lazyWorstCase(body: Readonly<Record<string, unknown>>, mode: PricingMode, target: RouteTarget, prices: PriceTable, text?: string): WorstCase {
  return new LazyWorstCase(body, mode, target, prices, text);
}

/**
 * The figures worked out on first read. A class rather than an object literal with getters: a literal
 * builds its accessor pair and two closures on every request, several times the size of this object.
 */
class LazyWorstCase implements WorstCase {
  #figures: WorstCase | undefined;

  constructor(
    private readonly body: Readonly<Record<string, unknown>>,
    private readonly mode: PricingMode,
    private readonly target: RouteTarget,
    private readonly prices: PriceTable,
    private readonly text: string | undefined,
  ) {}

  get costUsd(): number {
    return this.#get().costUsd;
  }

  get tokens(): number {
    return this.#get().tokens;
  }

  #get(): WorstCase {
    this.#figures ??= worstCase(this.body, this.mode, this.target, this.prices, this.text);
    return this.#figures;
  }
}
