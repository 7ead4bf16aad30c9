/**
 * Bench child: a mock OpenAI upstream on 127.0.0.1 (port 0) that answers POST /v1/chat/completions
 * at once with a fixed, realistic chat.completion, or with a whole SSE stream of chunks when the body
 * asks for `"stream": true` (50 content chunks, one write each), or with a tool call when it offers tools, and GET /v1/models with one model.
 * POST /v1/embeddings answers one fixed vector per input, for the complexity tiers the features phase measures.
 * Its first stdout line is `{"port": <n>}`. It exits when its stdin closes, so it never outlives the bench.
 */
import * as http from "node:http";

const MODEL = "gpt-4o-mini-2024-07-18";
const CREATED = 1_735_689_600;
const ANSWER =
  "Keep-alive connections let a client reuse one TCP connection for many requests, which saves the " +
  "handshake on every call. A gateway in front of a model provider keeps a pool of such connections " +
  "open so that each request only pays for its own bytes, not for setting up the transport again.";
const USAGE = {
  prompt_tokens: 42,
  completion_tokens: 58,
  total_tokens: 100,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};

// Built once: the mock must cost as little as possible so the figures are about the proxies.
const COMPLETION = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    object: "chat.completion",
    created: CREATED,
    model: MODEL,
    choices: [{ index: 0, message: { role: "assistant", content: ANSWER, refusal: null, annotations: [] }, logprobs: null, finish_reason: "stop" }],
    usage: USAGE,
    service_tier: "default",
    system_fingerprint: "fp_0ba0d124f1",
  }),
);

/** The answer to a request that offers tools: one call of a weather tool. */
const TOOL_CALL = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcU",
    object: "chat.completion",
    created: CREATED,
    model: MODEL,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: null, refusal: null, tool_calls: [{ id: "call_bench_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        logprobs: null,
        finish_reason: "tool_calls",
      },
    ],
    usage: USAGE,
  }),
);

/**
 * One chunk's event. `usage` undefined: a content chunk, whose `usage` is null when `nullUsage` (OpenAI
 * sends `"usage":null` in every chunk once the request asks for usage, as gateways do).
 */
function chunkEvent(delta: Record<string, unknown>, finish: string | null, usage?: unknown, nullUsage = false): string {
  const chunk = {
    id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    object: "chat.completion.chunk",
    created: CREATED,
    model: MODEL,
    service_tier: "default",
    system_fingerprint: "fp_0ba0d124f1",
    choices: usage === undefined ? [{ index: 0, delta, logprobs: null, finish_reason: finish }] : [],
    ...(usage === undefined ? (nullUsage ? { usage: null } : {}) : { usage }),
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** Content chunks per streamed answer, one word or so each, as a model sends tokens. */
const STREAM_CHUNKS = 50;

/** The streamed answer as its events: a role chunk, STREAM_CHUNKS content chunks and a finish chunk. */
function streamEvents(nullUsage: boolean): Buffer[] {
  const words = ANSWER.split(" ");
  const events = [chunkEvent({ role: "assistant", content: "", refusal: null }, null, undefined, nullUsage)];
  for (let i = 0; i < STREAM_CHUNKS; i++) {
    const word = words[i % words.length] ?? "";
    events.push(chunkEvent({ content: i === 0 ? word : ` ${word}` }, null, undefined, nullUsage));
  }
  events.push(chunkEvent({}, "stop", undefined, nullUsage));
  return events.map((event) => Buffer.from(event));
}

const STREAM = streamEvents(false);
const STREAM_WITH_NULL_USAGE = streamEvents(true);
const STREAM_USAGE = Buffer.from(chunkEvent({}, null, USAGE));
const DONE = Buffer.from("data: [DONE]\n\n");

function fail(res: http.ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code: null } });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** The list-models answer a gateway asks for at start, so its catalog holds the model the bench sends. */
const MODELS = Buffer.from(JSON.stringify({ object: "list", data: [{ id: "gpt-4o-mini", object: "model", created: CREATED, owned_by: "openai" }] }));

/** The dimensions of text-embedding-3-small: what parsing a real embeddings answer costs the gateway. */
const EMBEDDING_DIMENSIONS = 1536;
/** Nine decimals, as OpenAI's float answers carry. */
const VECTOR = Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => Number((Math.sin(i + 1) / 20).toFixed(9)));
/** Embeddings answers by input count, each built once. */
const embeddingAnswers = new Map<number, Buffer>();

function embeddingsAnswer(body: Record<string, unknown>): Buffer {
  const input = body["input"];
  const count = Array.isArray(input) && input.length > 0 && typeof input[0] !== "number" ? input.length : 1;
  let answer = embeddingAnswers.get(count);
  if (answer === undefined) {
    const data = Array.from({ length: count }, (_, index) => ({ object: "embedding", index, embedding: VECTOR }));
    answer = Buffer.from(JSON.stringify({ object: "list", data, model: "text-embedding-3-small", usage: { prompt_tokens: 8 * count, total_tokens: 8 * count } }));
    embeddingAnswers.set(count, answer);
  }
  return answer;
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  if (req.method === "GET" && req.url === "/v1/models") {
    req.resume();
    res.writeHead(200, { "content-type": "application/json", "content-length": MODELS.length });
    res.end(MODELS);
    return;
  }
  if (req.method !== "POST" || (req.url !== "/v1/chat/completions" && req.url !== "/v1/embeddings")) {
    req.resume();
    fail(res, 404, `no route ${req.method} ${req.url}`);
    return;
  }
  const parts: Buffer[] = [];
  req.on("data", (part: Buffer) => parts.push(part));
  req.on("end", () => {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(parts).toString("utf8")) as Record<string, unknown>;
    } catch {
      fail(res, 400, "body is not JSON");
      return;
    }
    if (req.url === "/v1/embeddings") {
      const answer = embeddingsAnswer(body);
      res.writeHead(200, { "content-type": "application/json", "content-length": answer.length });
      res.end(answer);
      return;
    }
    if (body["stream"] !== true) {
      // A request offering tools is answered with a call of the first one, as a model picking a tool does.
      const answer = Array.isArray(body["tools"]) && body["tools"].length > 0 ? TOOL_CALL : COMPLETION;
      res.writeHead(200, { "content-type": "application/json", "content-length": answer.length });
      res.end(answer);
      return;
    }
    const options = body["stream_options"] as Record<string, unknown> | undefined;
    const withUsage = options?.["include_usage"] === true;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    // One write per event, as a model streams them, but no pause between them: the bench measures the
    // proxies, not a model's pacing.
    for (const event of withUsage ? STREAM_WITH_NULL_USAGE : STREAM) res.write(event);
    if (withUsage) res.write(STREAM_USAGE);
    res.end(DONE);
  });
});
server.headersTimeout = 0;
server.requestTimeout = 0;

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("upstream has no TCP address");
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});

process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
