/**
 * The one implementation behind every OpenAI-compatible provider: the request JSON goes upstream as
 * received (model resolved, gateway-only fields removed), and the answer comes back unchanged.
 */
import type { Dispatcher } from "undici";
import { ProviderError } from "../provider-error.js";
import { providerStream, type EventMapper } from "../http/provider-stream.js";
import type { SseEvent } from "../http/sse.js";
import { callLimits, send, sendJson, streamCutShort, streamEventObject, type UpstreamCall } from "../http/upstream-http.js";
import { textOnlyChunk, withRawText } from "../raw-event.js";
import { UpstreamPool } from "../http/upstream-pool.js";
import type { CallOptions, ChatRequest, ClientBody, EmbeddingsRequest, JsonObject, ProviderAdapter, ProviderModel, ResponsesRequest, TokenUsage } from "../types.js";
import { chatUsage, noUsage, responsesUsage } from "../usage.js";
import type { OpenAiCompatibleProfile, OpenAiOperation } from "./profile.js";

/** Request fields only the gateway reads; an upstream would reject them. */
const GATEWAY_ONLY_FIELDS = ["fallbacks"];
/** Left out of a streaming body (the stream's own fields are then set by the call). */
const OMIT_FROM_STREAMING = new Set(GATEWAY_ONLY_FIELDS);
/** Left out of a non-streaming body: OpenAI rejects stream_options without stream. */
const OMIT_FROM_NON_STREAMING = new Set([...GATEWAY_ONLY_FIELDS, "stream", "stream_options"]);

/**
 * The upstream body: the request as received minus `omit`, with the target's model. Built by copying
 * rather than deleting, since a `delete` turns the object into a slow dictionary for JSON.stringify.
 */
function upstreamBody(req: JsonObject, model: string | undefined, omit: ReadonlySet<string>): JsonObject {
  const body: JsonObject = {};
  for (const field in req) if (!omit.has(field)) body[field] = req[field];
  if (model !== undefined) body["model"] = model;
  return body;
}

/**
 * The non-streaming upstream body: the client's own bytes when they encode exactly the JSON that would
 * be sent (same model, nothing to leave out), else the request re-encoded without the omitted fields.
 */
function nonStreamingBody(req: JsonObject, model: string | undefined, rawBody: ClientBody | undefined): JsonObject | Uint8Array {
  const fits = rawBody !== undefined && (model === undefined || model === req["model"]) && !hasAny(req, OMIT_FROM_NON_STREAMING);
  return fits ? rawBody.bytes : upstreamBody(req, model, OMIT_FROM_NON_STREAMING);
}

/**
 * The streaming upstream body: the client's own bytes when they already ask for a stream and encode the
 * request exactly (same model, nothing to leave out), with `members` (JSON object members, or "" for none)
 * added before their closing brace; else `build` applied to the request re-encoded. A null `members` means
 * the bytes cannot serve.
 */
function streamingBody(
  req: JsonObject,
  model: string | undefined,
  rawBody: ClientBody | undefined,
  members: string | null,
  build: (body: JsonObject) => JsonObject,
): JsonObject | string | Uint8Array {
  if (members !== null && rawBody !== undefined && req["stream"] === true && (model === undefined || model === req["model"]) && !hasAny(req, OMIT_FROM_STREAMING)) {
    if (members === "") return rawBody.bytes;
    // The bytes parsed as one JSON object with members, so the last brace closes it.
    const text = rawBody.text;
    const end = text.lastIndexOf("}");
    if (end !== -1) return `${text.slice(0, end)},${members}${text.slice(end)}`;
  }
  return build(upstreamBody(req, model, OMIT_FROM_STREAMING));
}

/** What a chat stream adds to the client's bytes to get usage: the option, unless the client set options itself. */
function chatStreamMembers(req: JsonObject, streamOptions: JsonObject): string | null {
  if (!("stream_options" in req)) return '"stream_options":{"include_usage":true}';
  return streamOptions["include_usage"] === true ? "" : null;
}

function hasAny(req: JsonObject, fields: ReadonlySet<string>): boolean {
  for (const field of fields) if (field in req) return true;
  return false;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An `error` object inside a stream (OpenRouter and others report mid-stream failures this way). */
function streamedError(provider: string, event: JsonObject): ProviderError | null {
  const error = event["error"];
  if (!isObject(error) && typeof error !== "string") return null;
  const message = isObject(error) && typeof error["message"] === "string" ? error["message"] : String(isObject(error) ? JSON.stringify(error) : error);
  return new ProviderError(provider, null, "provider_unavailable", `${provider} failed mid-stream: ${message}`);
}

/** What one chat stream's translation needs and collects. */
interface ChatStreamState {
  readonly provider: string;
  /** The caller asked for the usage-only chunk (stream_options.include_usage). */
  readonly callerWantsUsage: boolean;
  /** Chunks that carry neither usage nor an error may go out unparsed (CallOptions.textOnlyChunks). */
  readonly textOnly: boolean;
  usage: TokenUsage | null;
  /** The upstream sent `[DONE]`: anything after it is read (to free the socket) and dropped. */
  done: boolean;
  /** The data of the last event before `[DONE]`. */
  last: string;
}

/** A chunk that names a finish reason, which ends an answer as `[DONE]` does. */
const FINISHED = /"finish_reason"\s*:\s*"/;

/**
 * Chat chunks pass as they are, except the usage-only chunk the caller did not ask for. One event at a
 * time, as an EventMapper: the stream then has no async layer for the translation.
 */
class ChatEventMapper implements EventMapper {
  constructor(private readonly state: ChatStreamState) {}

  map(event: SseEvent): JsonObject | null {
    const state = this.state;
    if (state.done) return null;
    if (event.data === "[DONE]") {
      state.done = true;
      return null;
    }
    state.last = event.data;
    if (state.textOnly && plainChunk(event.data)) return textOnlyChunk(event.data);
    const chunk = streamEventObject(state.provider, event.data);
    const failure = streamedError(state.provider, chunk);
    if (failure) throw failure;
    const reported = chatUsage(chunk["usage"]);
    if (reported) state.usage = reported;
    if (state.callerWantsUsage || !reported) return withRawText(chunk, event.data);
    const choices = chunk["choices"];
    if (Array.isArray(choices) && choices.length === 0) return null;
    delete chunk["usage"];
    return chunk;
  }

  /**
   * An answer ends with `[DONE]`; upstreams that leave it out still end with a finish reason or the usage
   * chunk. Without any of them the body was cut off.
   */
  end(): void {
    const state = this.state;
    if (!state.done && state.usage === null && !FINISHED.test(state.last)) throw streamCutShort(state.provider, "[DONE]");
  }
}

/**
 * A key the gateway reads. One regular expression finds the first of them in a single pass over the text;
 * with the line breaks in it too (`|[\r\n]`) V8 could no longer skip ahead to each quote and the pass was
 * much slower, so a line break is looked for apart (a search for one character is the fastest there is).
 */
const READ_KEY = /"(?:error|usage)"/g;

/**
 * True when a chunk's text can go to the caller unparsed: it has the shape of one JSON object on one line
 * (a multi-line `data:` event, joined by the SSE parser with line feeds, could not go out as one `data:`
 * line; the parser splits lines at carriage returns, so none is left in an event), names no `error`, and
 * names `usage` at most as `"usage":null` (OpenAI puts that in every chunk once usage is asked for): the
 * gateway reads no other field. A false alarm, such as a delta whose text is "error", only costs the parse.
 * A chunk that is not JSON inside its braces then reaches the caller as the upstream sent it, whose SDK
 * reports it; one without its braces fails here.
 */
function plainChunk(data: string): boolean {
  if (data.charCodeAt(0) !== 123 /* { */ || data.charCodeAt(data.length - 1) !== 125 /* } */) return false;
  if (data.indexOf("\n") !== -1) return false;
  // test(), not exec(): it makes no match array, and both keys are seven characters long, so the one
  // found ends where lastIndex stands.
  READ_KEY.lastIndex = 0;
  if (!READ_KEY.test(data)) return true;
  const after = READ_KEY.lastIndex;
  if (!data.startsWith('"usage"', after - 7) || !isNullAfterColon(data, after)) return false;
  // Past a null usage, nothing else may follow: a second usage or an error.
  return !READ_KEY.test(data);
}

/** True when `data` holds `: null` at `at` (whitespace allowed around the colon). */
function isNullAfterColon(data: string, at: number): boolean {
  let i = at;
  while (data.charCodeAt(i) === 32) i++;
  if (data.charCodeAt(i) !== 58 /* : */) return false;
  i++;
  while (data.charCodeAt(i) === 32) i++;
  return data.startsWith("null", i);
}

/** What one Responses stream's translation needs and collects. */
interface ResponsesStreamState {
  readonly provider: string;
  usage: TokenUsage | null;
}

/** The Responses stream events that end an answer. */
const RESPONSE_ENDS = new Set(["response.completed", "response.incomplete", "response.failed"]);

/**
 * Responses events pass as they are; usage is read from the response they carry. Module-level, as above.
 * Nothing after the event that ends the answer (or `[DONE]`) passes.
 */
async function* translateResponsesEvents(state: ResponsesStreamState, events: AsyncIterable<SseEvent>): AsyncGenerator<JsonObject> {
  let done = false;
  for await (const event of events) {
    if (done || event.data === "[DONE]") {
      done = true;
      continue;
    }
    const payload = streamEventObject(state.provider, event.data);
    if (payload["type"] === "error") {
      throw streamedError(state.provider, { error: payload }) ?? new ProviderError(state.provider, null, "provider_unavailable", `${state.provider} failed mid-stream`);
    }
    const response = payload["response"];
    if (isObject(response)) state.usage = responsesUsage(response["usage"]) ?? state.usage;
    yield payload;
    if (RESPONSE_ENDS.has(payload["type"] as string)) done = true;
  }
  if (!done) throw streamCutShort(state.provider, "response.completed");
}

/** Creates the adapter for `profile`, with its own keep-alive pool unless a dispatcher is given. */
export function createOpenAiCompatibleAdapter(profile: OpenAiCompatibleProfile, dispatcher?: Dispatcher): ProviderAdapter {
  const pool = dispatcher ? null : new UpstreamPool();
  const agent: Dispatcher = pool === null ? (dispatcher as Dispatcher) : pool.agent;
  const name = profile.name;

  /**
   * The POST for `operation`: non-streaming when `streaming` is null, else the body as `streaming` makes
   * it, or the client's bytes with `rawMembers` added when they can serve (see streamingBody).
   */
  function postCall(
    operation: OpenAiOperation,
    req: JsonObject,
    model: string,
    options: CallOptions,
    streaming: ((body: JsonObject) => JsonObject) | null,
    rawMembers: string | null = null,
  ): UpstreamCall {
    const target = profile.target(operation, model, options.key);
    return {
      method: "POST",
      url: target.url,
      headers: target.headers,
      forwardedHeaders: options.headers,
      body: streaming === null ? nonStreamingBody(req, target.model, options.rawBody) : streamingBody(req, target.model, options.rawBody, rawMembers, streaming),
      ...callLimits(options),
    };
  }

  return {
    name,

    async chat(req: ChatRequest, options: CallOptions) {
      const res = await sendJson(agent, name, postCall("chat", req, req.model, options, null));
      return { status: res.status, body: res.body, raw: res.text, usage: chatUsage(res.body["usage"]) ?? noUsage() };
    },

    async chatStream(req: ChatRequest, options: CallOptions) {
      const streamOptions = isObject(req["stream_options"]) ? req["stream_options"] : {};
      // The gateway needs usage for budgets and rate limits; when the caller did not ask for it the
      // usage-only chunk is asked for anyway and kept from the caller.
      const callerWantsUsage = streamOptions["include_usage"] === true;
      const res = await send(
        agent,
        name,
        postCall("chat", req, req.model, options, (body) => ({ ...body, stream: true, stream_options: { ...streamOptions, include_usage: true } }), chatStreamMembers(req, streamOptions)),
      );
      const state: ChatStreamState = { provider: name, callerWantsUsage, textOnly: options.textOnlyChunks === true, usage: null, done: false, last: "" };
      return providerStream(name, res, options.signal, new ChatEventMapper(state), () => state.usage);
    },

    async responses(req: ResponsesRequest, options: CallOptions) {
      const res = await sendJson(agent, name, postCall("responses", req, req.model, options, null));
      return { status: res.status, body: res.body, raw: res.text, usage: responsesUsage(res.body["usage"]) ?? noUsage() };
    },

    async responsesStream(req: ResponsesRequest, options: CallOptions) {
      const res = await send(agent, name, postCall("responses", req, req.model, options, (body) => ({ ...body, stream: true }), ""));
      const state: ResponsesStreamState = { provider: name, usage: null };
      return providerStream(name, res, options.signal, (events) => translateResponsesEvents(state, events), () => state.usage);
    },

    // Passed through as received: token arrays, encoding_format and dimensions are the upstream's to honour.
    async embeddings(req: EmbeddingsRequest, options: CallOptions) {
      const res = await sendJson(agent, name, postCall("embeddings", req, req.model, options, null));
      return { status: res.status, body: res.body, raw: res.text, usage: chatUsage(res.body["usage"]) ?? noUsage() };
    },

    async listModels(key, options = {}): Promise<ProviderModel[]> {
      if (profile.staticModels) return profile.staticModels(key);
      const target = profile.target("models", null, key);
      const { body } = await sendJson(agent, name, { method: "GET", url: target.url, headers: target.headers, ...callLimits(options) });
      const data = Array.isArray(body["data"]) ? body["data"] : Array.isArray(body["models"]) ? body["models"] : [];
      const models: ProviderModel[] = [];
      for (const entry of data) {
        if (!isObject(entry) || typeof entry["id"] !== "string") continue;
        models.push({ id: entry["id"], ownedBy: typeof entry["owned_by"] === "string" ? entry["owned_by"] : null });
      }
      return models;
    },

    async preconnect(connections) {
      return pool === null ? [] : pool.preconnect(profile.origins(), connections);
    },

    async close() {
      await pool?.close();
    },
  };
}
