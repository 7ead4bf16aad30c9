/**
 * The provider-neutral contract the inference handlers call. Requests and responses are OpenAI wire JSON
 * (Anthropic's for the optional Messages methods); each adapter translates to and from its upstream's own
 * format.
 */

import type { AbortSource } from "../cancellation.js";
import type { PreconnectFailure } from "./http/upstream-pool.js";

/** A JSON object as received or sent on the wire. */
export type JsonObject = Record<string, unknown>;

/**
 * An OpenAI chat-completions request, the JSON object as received, with `model` already resolved to
 * the upstream model id. Fields the gateway does not know are kept and, for OpenAI-compatible
 * upstreams, sent on unchanged.
 */
export interface ChatRequest extends JsonObject {
  model: string;
  messages: unknown[];
  stream?: boolean;
}

/** An OpenAI Responses API request (as received, model resolved), kept as loosely typed as ChatRequest. */
export interface ResponsesRequest extends JsonObject {
  model: string;
  input?: unknown;
  stream?: boolean;
}

/**
 * An Anthropic Messages API request (as received, model resolved): `max_tokens` and `messages` checked,
 * everything else kept for an Anthropic upstream, translated for any other.
 */
export interface MessagesRequest extends JsonObject {
  model: string;
  max_tokens: number;
  messages: unknown[];
  stream?: boolean;
}

/** An Anthropic count_tokens request: a Messages request without max_tokens (model resolved). */
export interface CountTokensRequest extends JsonObject {
  model: string;
  messages: unknown[];
}

/**
 * An OpenAI embeddings request (as received, model resolved): `input` a string or a list of strings (or
 * token arrays, which only OpenAI-compatible upstreams take), optional `encoding_format` and `dimensions`.
 */
export interface EmbeddingsRequest extends JsonObject {
  model: string;
  input: unknown;
}

/** Azure's per-key block (azure_key_config). */
export interface AzureKeyConfig {
  /** e.g. https://my-resource.openai.azure.com */
  endpoint: string;
  /** Model id -> deployment name; a model missing here is used as the deployment name. */
  deployments: Record<string, string>;
  /** The `api-version` query value. */
  apiVersion: string;
}

/** AWS credentials of a Bedrock key (bedrock_key_config). */
export interface BedrockKeyConfig {
  accessKey: string;
  secretKey: string;
  /** Set for temporary credentials; null otherwise. */
  sessionToken: string | null;
  /** e.g. us-east-1: picks the default endpoint and signs the requests. */
  region: string;
}

/** The fields of a Google service account's JSON key that minting an access token needs. */
export interface ServiceAccount {
  clientEmail: string;
  /** PEM (PKCS#8) RSA private key. */
  privateKey: string;
  /** Where the signed assertion is exchanged for an access token. */
  tokenUri: string;
  /** The key's id, sent as the assertion's `kid` when known. */
  privateKeyId: string | null;
}

/** A Vertex AI key (vertex_key_config). */
export interface VertexKeyConfig {
  projectId: string;
  /** e.g. us-central1, or global. */
  region: string;
  credentials: ServiceAccount;
}

/** One upstream credential of a provider. */
export interface ProviderKey {
  id: string;
  name: string;
  /** The secret, already decrypted. */
  value: string;
  models: string[];
  /** User-facing name -> upstream model id. */
  aliases: Record<string, string>;
  weight: number;
  azure: AzureKeyConfig | null;
  /** Set for bedrock keys. */
  bedrock?: BedrockKeyConfig | null;
  /** Set for vertex keys. */
  vertex?: VertexKeyConfig | null;
}

/** A configured provider: its name selects the adapter; baseUrl is network_config.base_url. */
export interface ProviderConfig {
  name: string;
  baseUrl: string | null;
  keys: ProviderKey[];
}

/** Token counts of one call, in the gateway's own naming. */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

/**
 * A request body exactly as the client sent it: the text it was parsed from, and that text's UTF-8 bytes,
 * which go upstream as they are when the text does (not encoded again).
 */
export interface ClientBody {
  readonly text: string;
  readonly bytes: Uint8Array;
}

/** Per-call options: which key to use and when to give up. */
export interface CallOptions {
  key: ProviderKey;
  /** Aborting it aborts the upstream request and frees its socket, mid-stream included. */
  signal?: AbortSource;
  /**
   * The request exactly as the client encoded it, when `req` is that JSON unchanged: an adapter that would
   * send the same JSON sends these bytes instead (no re-encoding, numbers and field order kept).
   */
  rawBody?: ClientBody;
  /** Upper bound on waiting for response headers. */
  timeoutMs?: number;
  /** Upper bound on any gap between body chunks. */
  idleTimeoutMs?: number;
  /** The most bytes of answer read before the call fails. */
  maxResponseBytes?: number;
  /** The caller's headers to send along (lower-case names, already filtered); the provider's own headers win. */
  headers?: Readonly<Record<string, string>>;
  /**
   * The stream's consumer writes each chunk out as its text and reads no field: a chunk the adapter needs
   * nothing from may then arrive unparsed, as a textOnlyChunk.
   */
  textOnlyChunks?: boolean;
}

/** A complete non-streaming answer. */
export interface ProviderResult {
  /** The upstream's HTTP status (2xx; other statuses throw ProviderError). */
  status: number;
  /** OpenAI JSON (a chat.completion, a response object or an embeddings list), or an Anthropic message for `messages`. */
  body: JsonObject;
  /** The body exactly as the upstream sent it, when `body` is that JSON unchanged. */
  raw?: string;
  usage: TokenUsage;
}

/**
 * A streaming answer. The promise that yields it settles once the upstream has answered with headers,
 * so an upstream error (429, 401, ...) is thrown before the caller has written a byte and a fallback is
 * still possible. Iterating yields OpenAI JSON events: chat.completion.chunk objects for chat, Responses
 * events (each with a `type`) for responses; Anthropic events (each with a `type`) for messages. Breaking
 * out of the loop frees the upstream connection.
 */
export interface ProviderStream extends ChunkStream {
  readonly status: number;
  /** Token usage once the stream has ended; null before, or when the upstream never reported it. */
  usage(): TokenUsage | null;
}

/**
 * Streamed events, one at a time; a stream that can also hands them over grouped as they arrived (one
 * upstream read's events per batch). Every layer of async iteration costs each item a promise and a turn
 * of the microtask queue, and an upstream read often holds tens of events: a consumer that writes them
 * out together iterates `batches()` instead. Either way of iterating consumes the stream.
 */
export interface ChunkStream extends AsyncIterable<JsonObject> {
  /** The same events in batches, none empty. */
  batches?(): AsyncIterable<readonly JsonObject[]>;
}

/** One model as a provider's list-models API reports it. */
export interface ProviderModel {
  id: string;
  ownedBy: string | null;
}

/** What every provider adapter implements. */
export interface ProviderAdapter {
  /** The provider name (the config key, e.g. `openai`, `anthropic`, or a custom name). */
  readonly name: string;
  chat(req: ChatRequest, options: CallOptions): Promise<ProviderResult>;
  chatStream(req: ChatRequest, options: CallOptions): Promise<ProviderStream>;
  responses(req: ResponsesRequest, options: CallOptions): Promise<ProviderResult>;
  responsesStream(req: ResponsesRequest, options: CallOptions): Promise<ProviderStream>;
  /**
   * The Anthropic Messages API natively (the answer is an Anthropic message, the stream yields Anthropic
   * events); absent, the gateway serves it through `chat` and `chatStream`.
   */
  messages?(req: MessagesRequest, options: CallOptions): Promise<ProviderResult>;
  messagesStream?(req: MessagesRequest, options: CallOptions): Promise<ProviderStream>;
  /** Anthropic's token counting for a Messages request (`{input_tokens}`); absent, the gateway estimates. */
  countTokens?(req: CountTokensRequest, options: CallOptions): Promise<JsonObject>;
  /** Embeds the inputs; answers OpenAI's embeddings list. */
  embeddings(req: EmbeddingsRequest, options: CallOptions): Promise<ProviderResult>;
  listModels(key: ProviderKey, options?: Omit<CallOptions, "key">): Promise<ProviderModel[]>;
  /**
   * Opens `connections` keep-alive connections to each origin the provider calls, ahead of its first
   * requests; resolves with the attempts that failed and never rejects. A no-op on a shared dispatcher.
   */
  preconnect(connections: number): Promise<PreconnectFailure[]>;
  /** Closes the keep-alive pools. */
  close(): Promise<void>;
}
