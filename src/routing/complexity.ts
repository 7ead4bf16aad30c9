/**
 * Complexity tiers for routing rules: the request's last user message is placed in SIMPLE, MEDIUM or
 * COMPLEX, either by embedding similarity to configured examples or by a small classifier model. This
 * file holds the decisions that need no network: the nearest tier, reading a classifier's answer, the
 * text a request is judged by, and the tier each session last got.
 */
import type { ComplexityMechanism, ComplexityTier } from "../telemetry/metrics.js";

export type { ComplexityMechanism, ComplexityTier };

/** The tiers, simplest first. */
export const COMPLEXITY_TIERS: readonly ComplexityTier[] = ["SIMPLE", "MEDIUM", "COMPLEX"];

/** A provider and model an internal call goes to. */
export interface ModelRef {
  provider: string;
  model: string;
}

/** `routing.complexity` of the config file, checked. */
export interface ComplexitySettings {
  mechanism: "semantic" | "llm";
  /** The embeddings model of `semantic`. */
  embedding: ModelRef | null;
  /** The chat model of `llm`. */
  classifier: ModelRef | null;
  /** Example requests per tier; `semantic` needs at least one for every tier. */
  examples: Readonly<Record<ComplexityTier, readonly string[]>>;
}

/** What one request's tier came from. */
export interface ComplexityResult {
  /** "" when it could not be decided (the request goes on; a rule comparing the tier does not match). */
  tier: ComplexityTier | "";
  mechanism: ComplexityMechanism;
}

/** Cosine similarity of two vectors of the same length; 0 for a zero vector. */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** The tier whose closest example is most similar to `vector` (ties go to the simpler tier). */
export function nearestTier(vector: readonly number[], examples: ReadonlyMap<ComplexityTier, readonly (readonly number[])[]>): ComplexityTier | "" {
  let best: ComplexityTier | "" = "";
  let bestScore = -Infinity;
  for (const tier of COMPLEXITY_TIERS) {
    for (const example of examples.get(tier) ?? []) {
      const score = cosine(vector, example);
      if (score > bestScore) {
        bestScore = score;
        best = tier;
      }
    }
  }
  return best;
}

/** The tier a classifier model answered: the first tier word in its reply, or "" when it named none. */
export function tierFromAnswer(answer: string): ComplexityTier | "" {
  const match = /\b(SIMPLE|MEDIUM|COMPLEX)\b/i.exec(answer);
  return match === null ? "" : (match[1]?.toUpperCase() as ComplexityTier);
}

/** Text of a message's content: a string, or the text parts of a list of parts. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : ""))
    .filter((text) => text !== "")
    .join("\n");
}

/**
 * The text a request's complexity is judged by: its last user message (chat and Anthropic messages), or
 * the Responses API's `input`. "" when there is none.
 */
export function lastUserText(body: Readonly<Record<string, unknown>>): string {
  const messages = body["messages"];
  if (Array.isArray(messages)) {
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i] as { role?: unknown; content?: unknown } | null;
      if (message !== null && typeof message === "object" && message.role === "user") return contentText(message.content);
    }
    return "";
  }
  const input = body["input"];
  if (typeof input === "string") return input;
  if (Array.isArray(input)) {
    for (let i = input.length - 1; i >= 0; i--) {
      const item = input[i] as { role?: unknown; content?: unknown } | null;
      if (item !== null && typeof item === "object" && item.role === "user") return contentText(item.content);
    }
  }
  return "";
}
