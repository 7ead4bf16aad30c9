/**
 * GET /v1/models/{id}: one model in the OpenAI shape `{id, object: "model", created, owned_by}` when the
 * caller may use it, else a 404 in the OpenAI error envelope. The id is `provider/model` or a bare name;
 * its slash may arrive as is or percent-encoded (the OpenAI SDKs encode it).
 */
import { GatewayError } from "../../errors.js";
import type { OpenAiModel } from "../../services/model-service.js";
import { asGatewayError } from "../../inference/calls.js";
import { sendJson, type Req, type Res } from "../node-http.js";
import { badRequest, v1ErrorBody } from "./chat-completions.js";
import { headerReader } from "../../http-headers.js";

/** The path prefix the handler serves. */
export const MODEL_PATH_PREFIX = "/v1/models/";

/** Finds a model the caller (read from its headers) may use; null when there is none. */
export type ModelLookup = (id: string, header: (name: string) => string | null | undefined) => OpenAiModel | null;

function modelId(path: string): string {
  let id: string;
  try {
    id = decodeURIComponent(path.slice(MODEL_PATH_PREFIX.length));
  } catch {
    throw badRequest("the model id in the path is not valid percent-encoding", "model");
  }
  if (id === "") throw badRequest("name a model: GET /v1/models/<provider>/<model> or /v1/models/<model>", "model");
  return id;
}

/** Builds the handler; `path` is the request path without its query. */
export function createModelHandler(lookup: ModelLookup): (req: Req, res: Res, path: string) => void {
  return (req, res, path) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      sendJson(res, 405, { error: { message: `method ${req.method ?? ""} is not allowed on ${MODEL_PATH_PREFIX}{id}; use GET`, type: "caller_method_not_allowed", param: null, code: "method_not_allowed" } }, { allow: "GET" });
      return;
    }
    try {
      const id = modelId(path);
      const model = lookup(id, headerReader(req.headers));
      if (model === null) {
        throw new GatewayError("not_found", `model "${id}" does not exist or this caller may not use it; GET /v1/models lists the models`, { type: "caller_model_not_found", httpStatus: 404, field: "model" });
      }
      sendJson(res, 200, model);
    } catch (err) {
      const { status, body } = v1ErrorBody(asGatewayError(err));
      sendJson(res, status, body);
    }
  };
}
