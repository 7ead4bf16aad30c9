/**
 * Bench child: the floor plus only the duties the throughput goal names, done with the gateway's own
 * fastest parts, so the bench shows what those duties cost before any gateway feature is added. Per
 * request: the body parsed and its `model` read (a 400 when that fails); the virtual key `sk-gw-bench`
 * looked up in a Map (a 401 for any other); a request counter per minute and a token budget checked
 * (a 429 past them); the upstream answer read whole and parsed for its `usage` through the gateway's
 * dispatch handler (`sendJson`, a 502 when it is not JSON), the tokens charged to the key, and the text
 * sent back as it came with its length; a request counter, a duration histogram and a token counter
 * recorded in the gateway's metric families; one access line at `info` through the gateway's logger and
 * batched destination (to a file in a temporary directory). A streamed request is piped as the floor
 * pipes it, counted and logged the same way. No routing, key selection, fallbacks, health, cache,
 * dimensions or hierarchy. Its first stdout line is `{"port": <n>}`; it exits when its stdin closes.
 */
import * as http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postCall, sendJson } from "../src/providers/http/upstream-http.js";
import { sendJsonText } from "../src/server/node-http.js";
import { batchedDestination, createLogger } from "../src/telemetry/logger.js";
import { appendKey, CounterFamily, HistogramFamily, type LabelSet } from "../src/telemetry/metric-families.js";
import { answerAllocationRequests } from "./allocation-meter.js";
import { pipeUpstream, readBody, upstreamPool } from "./upstream-pipe.js";

const upstream = process.env["BENCH_UPSTREAM_URL"];
if (!upstream) throw new Error("BENCH_UPSTREAM_URL is required");
const pool = upstreamPool(upstream);
const completionsUrl = new URL("/v1/chat/completions", upstream).href;
const upstreamHeaders = { "content-type": "application/json", authorization: "Bearer sk-bench-upstream" };

const logDir = mkdtempSync(join(tmpdir(), "gw-floor-duties-"));
const logger = createLogger({ level: "info", destination: batchedDestination(join(logDir, "access.log")) });

const requests = new CounterFamily("floor_requests_total", "Requests by model and status.", ["model", "status"]);
const durations = new HistogramFamily("floor_request_duration_seconds", "Request durations.", ["model"], [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
const tokens = new CounterFamily("floor_tokens_total", "Tokens charged.", ["model"]);

/** Label sets resolved once per value list, as the gateway's metrics resolve theirs. */
const labelSets = new Map<string, LabelSet>();
function labelSet(model: string, status: string): LabelSet {
  const key = appendKey(appendKey("", model), status);
  let set = labelSets.get(key);
  if (set === undefined) {
    set = { labels: status === "" ? { model } : { model, status }, key };
    labelSets.set(key, set);
  }
  return set;
}

/** The one virtual key: a per-minute request limit and a token budget, both far above what the bench sends. */
interface VirtualKey {
  id: string;
  minute: number;
  requests: number;
  requestLimit: number;
  tokensLeft: number;
}
const keys = new Map<string, VirtualKey>([["sk-gw-bench", { id: "vk-bench", minute: 0, requests: 0, requestLimit: 1e12, tokensLeft: 1e15 }]]);

/** The key a request may spend, counted; a reason to refuse it otherwise. */
function admit(req: http.IncomingMessage): VirtualKey | { status: number; message: string } {
  const auth = req.headers.authorization ?? "";
  const key = keys.get(auth.startsWith("Bearer ") ? auth.slice(7) : "");
  if (key === undefined) return { status: 401, message: "unknown virtual key" };
  const minute = Math.floor(Date.now() / 60_000);
  if (minute !== key.minute) {
    key.minute = minute;
    key.requests = 0;
  }
  if (++key.requests > key.requestLimit) return { status: 429, message: "request limit reached" };
  if (key.tokensLeft <= 0) return { status: 429, message: "token budget spent" };
  return key;
}

/** The request's metrics and access line. */
function record(req: http.IncomingMessage, model: string, status: number, started: number, used: number): void {
  const durationS = (performance.now() - started) / 1e3;
  const byModel = labelSet(model, "");
  requests.inc(labelSet(model, String(status)));
  durations.observe(byModel, durationS);
  if (used > 0) tokens.inc(byModel, used);
  logger.info({ path: req.url, method: req.method, status, duration_ms: Math.round(durationS * 1e6) / 1e3, model, tokens: used }, "request");
}

function refuse(res: http.ServerResponse, status: number, message: string): void {
  sendJsonText(res, status, JSON.stringify({ error: { message, type: "floor_refused" } }));
}

function usedTokens(answer: Record<string, unknown>): number {
  const usage = answer["usage"] as { total_tokens?: unknown } | undefined;
  return typeof usage?.total_tokens === "number" ? usage.total_tokens : 0;
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const started = performance.now();
  readBody(req, (raw) => {
    const text = raw.toString("utf8");
    let body: { model?: unknown; stream?: unknown } | null;
    try {
      body = JSON.parse(text) as { model?: unknown; stream?: unknown } | null;
    } catch {
      body = null;
    }
    const model = body?.model;
    if (typeof model !== "string") return refuse(res, 400, "the body is not JSON with a string model");
    const key = admit(req);
    if (!("id" in key)) return refuse(res, key.status, key.message);
    const failed = (err: unknown): void => {
      // A stream that broke after its headers went out cannot be answered: end the connection instead.
      if (res.headersSent) res.destroy();
      else refuse(res, 502, `floor-duties: ${err instanceof Error ? err.message : String(err)}`);
      record(req, model, 502, started, 0);
    };
    if (body?.stream === true) {
      pipeUpstream(pool, req, res, raw).then(() => record(req, model, res.statusCode, started, 0), failed);
      return;
    }
    sendJson(pool, "openai", postCall(completionsUrl, upstreamHeaders, text, {})).then((answer) => {
      const used = usedTokens(answer.body);
      key.tokensLeft -= used;
      sendJsonText(res, answer.status, answer.text);
      record(req, model, answer.status, started, used);
    }, failed);
  });
});
server.headersTimeout = 0;
server.requestTimeout = 0;

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("floor-duties has no TCP address");
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});

answerAllocationRequests();
process.stdin.on("end", () => {
  rmSync(logDir, { recursive: true, force: true });
  process.exit(0);
});
process.stdin.resume();
