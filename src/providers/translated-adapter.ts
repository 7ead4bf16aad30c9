/**
 * The frame of an adapter that translates chat to another API (Bedrock, Vertex, Gemini): its own
 * keep-alive pool unless it shares a dispatcher, the Responses API bridged onto its chat, and pool
 * warm-up and shutdown; the adapter brings its calls and the origins it reaches.
 */
import type { Dispatcher } from "undici";
import { UpstreamPool } from "./http/upstream-pool.js";
import { bridgeResponses, bridgeResponsesStream } from "./responses-bridge/bridge.js";
import { GatewayError } from "../errors.js";
import type { ProviderAdapter, ProviderKey } from "./types.js";

/** What a translating adapter implements itself. */
export type TranslatedCalls = Pick<ProviderAdapter, "chat" | "chatStream" | "embeddings" | "listModels">;

/** The dispatcher an adapter sends through: the shared one, or its own pool's. */
export interface AdapterTransport {
  agent: Dispatcher;
  /** Null when a shared dispatcher was given. */
  pool: UpstreamPool | null;
}

/** A pool of the adapter's own unless a dispatcher is shared. */
export function adapterTransport(dispatcher?: Dispatcher): AdapterTransport {
  if (dispatcher) return { agent: dispatcher, pool: null };
  const pool = new UpstreamPool();
  return { agent: pool.agent, pool };
}

/** Assembles the adapter; `origins` lists the URLs its calls go to, for opening connections ahead. */
export function translatedAdapter(name: string, transport: AdapterTransport, calls: TranslatedCalls, origins: () => string[]): ProviderAdapter {
  const { pool } = transport;
  const adapter: ProviderAdapter = {
    name,
    chat: calls.chat,
    chatStream: calls.chatStream,
    embeddings: calls.embeddings,
    listModels: calls.listModels,
    responses: (req, options) => bridgeResponses(adapter, req, options),
    responsesStream: (req, options) => bridgeResponsesStream(adapter, req, options),
    async preconnect(connections) {
      return pool === null ? [] : pool.preconnect(origins(), connections);
    },
    async close() {
      await pool?.close();
    },
  };
  return adapter;
}

/**
 * A key's provider-specific block, which saving the provider already required: its absence here means
 * the provider was set up without the checks (a programming error worth a clear message, not a crash).
 */
export function keyBlock<T>(provider: string, key: ProviderKey, block: string, value: T | null | undefined, needs: string): T {
  if (value === null || value === undefined) {
    throw new GatewayError("failed_precondition", `provider ${provider} key ${key.id} has no ${block}: set its ${needs}`, {
      type: "gateway_provider_misconfigured",
      field: `providers.${provider}.keys.${key.id}.${block}`,
    });
  }
  return value;
}
