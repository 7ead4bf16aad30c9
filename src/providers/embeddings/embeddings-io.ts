/**
 * OpenAI embeddings requests read for the providers that translate them (Bedrock, Vertex, Gemini), and
 * their vectors answered in OpenAI's list shape, floats or base64 (little-endian float32, as OpenAI
 * encodes them).
 */
import { GatewayError } from "../../errors.js";
import { callerError } from "../chat-translation/chat-input.js";
import { ProviderError } from "../provider-error.js";
import type { EmbeddingsRequest, JsonObject, ProviderResult, TokenUsage } from "../types.js";

/** The texts to embed; token arrays are refused, since these upstreams take text only. */
export function embeddingTexts(req: EmbeddingsRequest, provider: string): string[] {
  const input = req.input;
  if (typeof input === "string") return [input];
  if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === "string")) return input as string[];
  throw callerError("input", `${provider} embeds text only: send input as a string or a list of strings (token arrays work with OpenAI-compatible providers)`);
}

/** The requested `dimensions`; null when absent. */
export function embeddingDimensions(req: EmbeddingsRequest): number | null {
  const dimensions = req["dimensions"];
  return typeof dimensions === "number" ? dimensions : null;
}

function base64Vector(vector: readonly number[]): string {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => buffer.writeFloatLE(value, i * 4));
  return buffer.toString("base64");
}

/** The OpenAI embeddings list for `vectors` (in input order). */
export function embeddingsResult(req: EmbeddingsRequest, vectors: readonly number[][], inputTokens: number): ProviderResult {
  const base64 = req["encoding_format"] === "base64";
  const usage: TokenUsage = { input_tokens: inputTokens, output_tokens: 0 };
  const body: JsonObject = {
    object: "list",
    data: vectors.map((vector, index) => ({ object: "embedding", index, embedding: base64 ? base64Vector(vector) : vector })),
    model: req.model,
    usage: { prompt_tokens: inputTokens, total_tokens: inputTokens },
  };
  return { status: 200, body, usage };
}

/** A vector from an upstream answer: a list of numbers, else the answer is malformed. */
export function vectorOf(value: unknown, provider: string): number[] {
  if (Array.isArray(value) && value.every((v) => typeof v === "number")) return value as number[];
  throw new ProviderError(provider, null, "provider_unavailable", `${provider} answered an embedding that is not a list of numbers`);
}

/** The refusal of a provider that has no embeddings API. */
export function noEmbeddings(provider: string): GatewayError {
  return new GatewayError("invalid_argument", `provider ${provider} has no embeddings API; route embeddings to an OpenAI-compatible provider, bedrock, vertex or gemini`, {
    type: "caller_unsupported_operation",
    httpStatus: 400,
    field: "model",
  });
}
