/**
 * POST /v1/embeddings (OpenAI's embeddings API): checks the fields the gateway reads and runs the
 * inference service with method "embedding", so governance, routing, key rotation, fallbacks, budgets and
 * telemetry are the chat path's. The answer is OpenAI's embeddings list, passed through from
 * OpenAI-compatible upstreams and translated from the others.
 */
import type { EmbeddingsRequest, JsonObject } from "../../providers/types.js";
import type { RequestScope } from "../../services/context.js";
import type { MethodBody } from "../../inference/calls.js";
import { badRequest, checkStreamAndFallbacks, createV1Handler, requireModel, type ChatCompletionsOptions, type V1Endpoint } from "./chat-completions.js";
import type { Req, Res } from "../node-http.js";

function isTokenArray(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0 && value.every((token) => Number.isSafeInteger(token) && (token as number) >= 0);
}

/** True for what OpenAI takes as `input`: a string, strings, a token array, or token arrays (none empty). */
function validInput(input: unknown): boolean {
  if (typeof input === "string") return input !== "";
  if (!Array.isArray(input) || input.length === 0) return false;
  if (input.every((item) => typeof item === "string" && item !== "")) return true;
  return isTokenArray(input) || input.every(isTokenArray);
}

/** Checks model, input, encoding_format, dimensions and fallbacks; other fields pass through to OpenAI-compatible upstreams. */
export function validateEmbeddingsBody(body: JsonObject): Extract<MethodBody, { method: "embedding" }> {
  requireModel(body);
  if (!validInput(body["input"])) {
    throw badRequest("input is required: a non-empty string, a list of non-empty strings, or token arrays (lists of integers)", "input");
  }
  if (checkStreamAndFallbacks(body)) throw badRequest("embeddings do not stream: leave stream out", "stream");
  const format = body["encoding_format"];
  if (format !== undefined && format !== null && format !== "float" && format !== "base64") {
    throw badRequest(`encoding_format must be "float" or "base64"`, "encoding_format");
  }
  const dimensions = body["dimensions"];
  if (dimensions !== undefined && dimensions !== null && !(Number.isSafeInteger(dimensions) && (dimensions as number) > 0)) {
    throw badRequest("dimensions must be a whole number > 0", "dimensions");
  }
  // The checks above are all the type claims: the body itself goes on, not a copy of it.
  return { method: "embedding", body: body as EmbeddingsRequest };
}

const EMBEDDINGS_ENDPOINT: V1Endpoint = {
  name: "embeddings request",
  method: "embedding",
  validate: validateEmbeddingsBody,
  // Never used: an embeddings call always answers with one JSON body.
  framing: () => ({ event: (event) => `data: ${JSON.stringify(event)}\n\n`, error: (envelope) => `data: ${JSON.stringify(envelope)}\n\n`, end: "" }),
};

/** Builds the handler for POST /v1/embeddings. */
export function createEmbeddingsHandler(opts: ChatCompletionsOptions): (req: Req, res: Res, scope?: RequestScope) => Promise<void> {
  return createV1Handler(opts, EMBEDDINGS_ENDPOINT);
}
