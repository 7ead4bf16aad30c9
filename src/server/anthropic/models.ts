/**
 * GET /anthropic/v1/models and GET /anthropic/v1/models/{id} exactly as Anthropic's Models API answers
 * them: `{data: [{type: "model", id, display_name, created_at}], has_more, first_id, last_id}` paged with
 * `limit` (1-1000, default 1000), `after_id` and `before_id`, or one model; errors in Anthropic's envelope.
 * The names are those the caller's virtual key may use, without their provider prefix.
 */
import { GatewayError } from "../../errors.js";
import type { JsonObject } from "../../providers/types.js";
import { asGatewayError } from "../../inference/calls.js";
import { COMPAT_CREATED_AT, type CompatModelNames } from "../../services/model-service.js";
import { sendJson, type Req, type Res } from "../node-http.js";
import { badRequest } from "../v1/chat-completions.js";
import { anthropicErrorBody } from "./anthropic-error.js";
import { headerReader } from "../../http-headers.js";

/** The listing's path; one model is under it. */
export const MODELS_PATH = "/anthropic/v1/models";

/** The default and largest page. */
const MAX_LIMIT = 1000;

function entry(id: string): JsonObject {
  return { type: "model", id, display_name: id, created_at: COMPAT_CREATED_AT };
}

function limitOf(query: URLSearchParams): number {
  const raw = query.get("limit");
  if (raw === null) return MAX_LIMIT;
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || limit < 1 || limit > MAX_LIMIT) throw badRequest(`limit: must be a whole number from 1 to ${MAX_LIMIT}, got ${JSON.stringify(raw)}`, "limit");
  return limit;
}

/** One page of `names`: after `after_id`, before `before_id`, or from the start. */
function page(names: readonly string[], query: URLSearchParams): JsonObject {
  const limit = limitOf(query);
  const after = query.get("after_id");
  const before = query.get("before_id");
  if (after !== null && before !== null) throw badRequest("send after_id or before_id, not both", "after_id");
  const cursor = after ?? before;
  const at = cursor === null ? -1 : names.indexOf(cursor);
  if (cursor !== null && at < 0) throw badRequest(`${after !== null ? "after_id" : "before_id"}: "${cursor}" is not a model of this listing`, after !== null ? "after_id" : "before_id");
  let start: number;
  let end: number;
  let hasMore: boolean;
  if (before !== null) {
    end = at;
    start = Math.max(0, end - limit);
    hasMore = start > 0;
  } else {
    start = at + 1;
    end = Math.min(names.length, start + limit);
    hasMore = end < names.length;
  }
  const ids = names.slice(start, end);
  return { data: ids.map(entry), has_more: hasMore, first_id: ids[0] ?? null, last_id: ids[ids.length - 1] ?? null };
}

/** Builds the handler; `path` and `query` are the request's, split. */
export function createAnthropicModelsHandler(names: CompatModelNames): (req: Req, res: Res, path: string, query: string) => void {
  return (req, res, path, query) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      sendJson(res, 405, { type: "error", error: { type: "invalid_request_error", message: `method ${req.method ?? ""} is not allowed on ${path}; use GET` } }, { allow: "GET" });
      return;
    }
    try {
      const usable = names(headerReader(req.headers));
      if (path === MODELS_PATH) {
        sendJson(res, 200, page(usable, new URLSearchParams(query)));
        return;
      }
      const id = decodeURIComponent(path.slice(MODELS_PATH.length + 1));
      if (!usable.includes(id)) {
        throw new GatewayError("not_found", `model "${id}" does not exist or this caller may not use it; GET ${MODELS_PATH} lists the models`, { type: "caller_model_not_found", httpStatus: 404, field: "model_id" });
      }
      sendJson(res, 200, entry(id));
    } catch (err) {
      const error = err instanceof URIError ? badRequest("the model id in the path is not valid percent-encoding", "model_id") : asGatewayError(err);
      const { status, body } = anthropicErrorBody(error);
      sendJson(res, status, body);
    }
  };
}
