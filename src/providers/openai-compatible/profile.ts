/** How one OpenAI-compatible provider differs from the others: where requests go and how keys are sent. */
import type { ProviderKey, ProviderModel } from "../types.js";

/** The operations an OpenAI-compatible upstream serves. */
export type OpenAiOperation = "chat" | "responses" | "embeddings" | "models";

/** Where to send one operation and with which headers; `model` replaces the body's model when set. */
export interface OpenAiTarget {
  url: string;
  headers: Record<string, string>;
  model?: string;
}

/** A provider of the OpenAI-compatible family. */
export interface OpenAiCompatibleProfile {
  name: string;
  /** Resolves the target of an operation; `model` is the upstream model id (null for models). */
  target(operation: OpenAiOperation, model: string | null, key: ProviderKey): OpenAiTarget;
  /** The URLs its calls go to (only their origins matter), for opening connections ahead of the first call. */
  origins(): string[];
  /** Lists models without a network call, for providers whose list endpoint does not fit (Azure). */
  staticModels?(key: ProviderKey): ProviderModel[];
}
