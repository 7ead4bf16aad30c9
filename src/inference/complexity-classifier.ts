/**
 * Computes a request's complexity tier for routing rules that read `complexity_tier`, as
 * `routing.complexity` configures: `semantic` embeds the last user message and takes the tier of the most
 * similar configured example (the examples are embedded once, at start: the warm-up), `llm` asks a small
 * classifier model. A session keeps the tier it got last. A tier that cannot be computed (no user text, a
 * provider error) is "" with mechanism `skipped`: the request goes on, and a rule comparing the tier simply
 * does not match.
 */
import type { AbortSource } from "../cancellation.js";
import { orderKeys } from "../routing/key-selection.js";
import { COMPLEXITY_TIERS, lastUserText, nearestTier, tierFromAnswer, type ComplexityResult, type ComplexitySettings, type ComplexityTier, type ModelRef } from "../routing/complexity.js";
import { SessionMemory } from "../routing/session-affinity.js";
import type { CallOptions, ProviderResult } from "../providers/types.js";
import type { Inference } from "./state.js";

/** What the classifier reports: embedding calls for `gw_routing_embedding_*`, and failures for the log. */
export interface ComplexityObserver {
  embedding(provider: string, model: string, phase: "request" | "warmup", costUsd: number | null): void;
  failed(stage: "warmup" | "request", error: unknown): void;
}

/** The user text sent to the classifier or the embeddings model is cut to this many characters. */
const MAX_TEXT = 8_000;
/** Upper bound on one classification call when the provider sets no timeout of its own. */
const DEFAULT_TIMEOUT_MS = 10_000;

const CLASSIFIER_PROMPT =
  "Classify how complex the user's request is to answer well. Answer with exactly one word: SIMPLE (a short fact, a greeting, a small edit), MEDIUM (a few steps of reasoning or a moderate amount of writing or code) or COMPLEX (deep multi-step reasoning, design, long or difficult code).";

function vectorsOf(result: ProviderResult): number[][] {
  const data = result.body["data"];
  if (!Array.isArray(data)) throw new Error("the embeddings answer has no data list");
  return data.map((item, index) => {
    const embedding = (item as { embedding?: unknown } | null)?.embedding;
    if (!Array.isArray(embedding) || !embedding.every((x) => typeof x === "number")) throw new Error(`the embeddings answer's data[${index}] has no numeric embedding`);
    return embedding as number[];
  });
}

function answerText(result: ProviderResult): string {
  const choices = result.body["choices"];
  const message = Array.isArray(choices) ? (choices[0] as { message?: { content?: unknown } } | undefined)?.message : undefined;
  return typeof message?.content === "string" ? message.content : "";
}

/** Classifies requests for one `routing.complexity` configuration. */
export class ComplexityClassifier {
  readonly #settings: ComplexitySettings;
  readonly #inference: Inference;
  readonly #observer: ComplexityObserver;
  readonly #sessions = new SessionMemory<ComplexityTier>();
  /** The examples' embeddings, once the warm-up succeeded; a failed warm-up is retried by the next request. */
  #examples: Promise<Map<ComplexityTier, number[][]>> | null = null;

  constructor(settings: ComplexitySettings, inference: Inference, observer: ComplexityObserver) {
    this.#settings = settings;
    this.#inference = inference;
    this.#observer = observer;
  }

  /** Embeds the examples (semantic only); failures are reported and retried on first use. */
  async warmup(): Promise<void> {
    if (this.#settings.mechanism !== "semantic") return;
    await this.#exampleVectors().catch(() => undefined);
  }

  /** The request's tier; never throws (a failure is `skipped`). */
  async classify(body: Readonly<Record<string, unknown>>, sessionId: string, signal?: AbortSource): Promise<ComplexityResult> {
    if (sessionId !== "") {
      const known = this.#sessions.get(sessionId);
      if (known !== null) return { tier: known, mechanism: "session" };
    }
    const text = lastUserText(body).slice(0, MAX_TEXT);
    if (text.trim() === "") return { tier: "", mechanism: "skipped" };
    const mechanism = this.#settings.mechanism;
    let tier: ComplexityTier | "";
    try {
      tier = mechanism === "semantic" ? await this.#semantic(text, signal) : await this.#llm(text, signal);
    } catch (err) {
      this.#observer.failed("request", err);
      return { tier: "", mechanism: "skipped" };
    }
    if (tier === "") return { tier: "", mechanism: "skipped" };
    if (sessionId !== "") this.#sessions.set(sessionId, tier);
    return { tier, mechanism };
  }

  async #semantic(text: string, signal: AbortSource | undefined): Promise<ComplexityTier | ""> {
    const examples = await this.#exampleVectors();
    const [vector] = await this.#embed([text], "request", signal);
    return vector === undefined ? "" : nearestTier(vector, examples);
  }

  async #llm(text: string, signal: AbortSource | undefined): Promise<ComplexityTier | ""> {
    const ref = this.#settings.classifier as ModelRef;
    const shots = COMPLEXITY_TIERS.flatMap((tier) => this.#settings.examples[tier].map((example) => `${tier}: ${example}`));
    const system = shots.length === 0 ? CLASSIFIER_PROMPT : `${CLASSIFIER_PROMPT}\nExamples:\n${shots.join("\n")}`;
    const result = await this.#call(ref, signal, (adapter, model, options) =>
      adapter.chat({ model, messages: [{ role: "system", content: system }, { role: "user", content: text }], max_tokens: 5, temperature: 0 }, options),
    );
    return tierFromAnswer(answerText(result));
  }

  #exampleVectors(): Promise<Map<ComplexityTier, number[][]>> {
    if (this.#examples === null) {
      const texts = COMPLEXITY_TIERS.flatMap((tier) => this.#settings.examples[tier].map((text) => ({ tier, text })));
      const pending = this.#embed(texts.map((t) => t.text), "warmup", undefined).then((vectors) => {
        const byTier = new Map<ComplexityTier, number[][]>();
        vectors.forEach((vector, index) => {
          const tier = texts[index]?.tier;
          if (tier !== undefined) byTier.set(tier, [...(byTier.get(tier) ?? []), vector]);
        });
        return byTier;
      });
      this.#examples = pending;
      pending.catch((err: unknown) => {
        this.#observer.failed("warmup", err);
        if (this.#examples === pending) this.#examples = null;
      });
    }
    return this.#examples;
  }

  async #embed(input: string[], phase: "request" | "warmup", signal: AbortSource | undefined): Promise<number[][]> {
    const ref = this.#settings.embedding as ModelRef;
    const result = await this.#call(ref, signal, (adapter, model, options) => adapter.embeddings({ model, input }, options));
    const usage = result.usage;
    this.#observer.embedding(ref.provider, ref.model, phase, this.#inference.prices.cost({ provider: ref.provider, upstreamModel: ref.model, alias: null, mode: "embedding" }, usage));
    const vectors = vectorsOf(result);
    if (vectors.length !== input.length) throw new Error(`the embeddings answer has ${vectors.length} vectors for ${input.length} inputs`);
    return vectors;
  }

  /** One call to the configured model with its provider's first usable key. */
  async #call(
    ref: ModelRef,
    signal: AbortSource | undefined,
    send: (adapter: NonNullable<ReturnType<Inference["providers"]["get"]>>["adapter"], model: string, options: CallOptions) => Promise<ProviderResult>,
  ): Promise<ProviderResult> {
    const provider = this.#inference.providers.get(ref.provider);
    if (provider === undefined) throw new Error(`provider "${ref.provider}" of routing.complexity is not configured`);
    const [choice] = orderKeys({ provider: ref.provider, model: ref.model, keys: provider.keys, config: null, catalog: this.#inference.catalog, random: this.#inference.random });
    const key = provider.keys.find((candidate) => candidate.id === choice?.key.id);
    if (choice === undefined || key === undefined) throw new Error(`provider "${ref.provider}" has no key for model "${ref.model}"`);
    const timeoutMs = provider.timeoutMs ?? this.#inference.upstreamTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    const options: CallOptions = { key, timeoutMs: Math.min(timeoutMs, DEFAULT_TIMEOUT_MS) };
    if (signal !== undefined) options.signal = signal;
    return send(provider.adapter, choice.upstreamModel, options);
  }
}
