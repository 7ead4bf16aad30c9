/**
 * The REST/JSON bridge: matches a request against the route table compiled from the
 * `google.api.http` annotations, builds the request message from path, query and body, calls the
 * RPC through a Connect transport (so the same interceptors run as for RPC clients), and writes the
 * response or the /api error envelope. No route is written by hand.
 */
import type * as http2 from "node:http2";
import { create, createRegistry, type DescField, type DescService, type Registry } from "@bufbuild/protobuf";
import { isFieldError, reflect, type ReflectList, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import type { Transport } from "@connectrpc/connect";
import { forwardedHeaders } from "./forward-headers.js";
import { fileTrace, TRACE_REF_HEADER, withdrawTrace } from "../../telemetry/trace-handoff.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import { messageFromJson, mergeMessageJson } from "../../proto-json/message-from-json.js";
import { messageToRestJson } from "../../proto-json/message-to-json.js";
import { ClientClosedError, discardBody, readJsonBody } from "./request-body.js";
import { invalidRequest, methodNotAllowed, restErrorResponse } from "./rest-error.js";
import { compileRoutes, type PathParam, type RestRoute, type RouteTable } from "./route-table.js";
import { enumFromJson, scalarFromText } from "../../proto-json/scalar-input.js";
import { updateMaskPaths } from "../../proto-json/update-mask.js";
import { sendJson, type Req, type Res } from "../node-http.js";
import { dropRefusedBody } from "../refused-body.js";

/** What the bridge serves and how it reaches the services. */
export interface RestHandlerOptions {
  services: readonly DescService[];
  /** The in-process transport (in-process-transport.ts) over the served routes, so REST runs the RPC interceptors. */
  transport: Transport;
  /** Bodies over this many bytes get a 413. */
  maxBodyBytes: number;
  /** The compiled routes of `services`, when the caller already has them. */
  table?: RouteTable;
}

/**
 * Builds the handler; the route table is compiled here and a bad rule throws. The handler resolves
 * false, having written nothing, when no route template matches the path.
 */
export function createRestHandler(o: RestHandlerOptions): (req: Req, res: Res, trace?: TraceNode) => Promise<boolean> {
  const table = o.table ?? compileRoutes(o.services);
  const registry = createRegistry(...o.services.map((s) => s.file));
  return async (req, res, trace) => {
    const { path, query } = splitUrl(req.url ?? "/");
    const found = table.match(req.method ?? "GET", path);
    if (found.kind === "none") return false;
    if (found.kind === "method_not_allowed") {
      writeError(req, res, methodNotAllowed(req.method ?? "", path, found.allow), { allow: found.allow.join(", ") });
      return true;
    }
    const abort = new AbortController();
    const onClose = (): void => {
      if (!res.writableEnded) abort.abort();
    };
    res.once("close", onClose);
    const ref = trace === undefined ? undefined : fileTrace(trace);
    try {
      const input = await requestMessage(found.route, found.params, query, req, o.maxBodyBytes, registry).catch((err: unknown) => {
        // The readers check every value first; this only catches a check they missed, as a 400 rather than a 500.
        throw isFieldError(err) ? invalidRequest(`${err.field().name}: ${err.message}`) : err;
      });
      const headers = forwardedHeaders(req);
      headers.delete(TRACE_REF_HEADER);
      if (ref !== undefined) headers.set(TRACE_REF_HEADER, ref);
      const response = await o.transport.unary(found.route.method, abort.signal, undefined, headers, input.message);
      sendJson(res, 200, messageToRestJson(found.route.method.output, response.message, registry), answerHeaders(response.header));
    } catch (err) {
      if (abort.signal.aborted || err instanceof ClientClosedError) return true;
      writeError(req, res, err);
    } finally {
      res.off("close", onClose);
      if (ref !== undefined) withdrawTrace(ref);
    }
    return true;
  };
}

async function requestMessage(
  route: RestRoute,
  params: readonly PathParam[],
  query: string,
  req: Req,
  maxBodyBytes: number,
  registry: Registry,
): Promise<ReflectMessage> {
  // The body is read first so that every later 400 leaves no unread request data behind.
  const body = route.body.kind === "none" ? await discardBody(req, maxBodyBytes) : await readJsonBody(req, maxBodyBytes);
  const target = reflect(route.method.input);
  for (const param of params) {
    const where = `path parameter "${param.field.name}"`;
    let text: string;
    try {
      text = decodeURIComponent(param.raw);
    } catch {
      throw invalidRequest(`${where} has a bad percent-escape: "${param.raw}"`, param.field.name);
    }
    target.set(param.field, singularFromText(param.field, text, where));
  }
  applyQuery(target, route, query);
  if (body === undefined || route.body.kind === "none") return target;
  if (route.body.kind === "all") {
    const reserved = new Map([...route.pathFields.keys()].map((name) => [name, "is set by the URL path; remove it from the body"]));
    mergeMessageJson(target, body, "", { registry, reserved });
    return target;
  }
  const bodyField = route.body.field;
  target.set(bodyField, messageFromJson(bodyField.message, body, bodyField.name, { registry }));
  if (route.updateMaskField !== undefined) {
    const mode = route.httpMethod === "PATCH" ? "merge" : "replace";
    const mask = create(FieldMaskSchema, { paths: updateMaskPaths(bodyField.message, body, mode) });
    target.set(route.updateMaskField, reflect(FieldMaskSchema, mask));
  }
  return target;
}

function applyQuery(target: ReflectMessage, route: RestRoute, query: string): void {
  const params = new URLSearchParams(query);
  for (const name of new Set(params.keys())) {
    const field = route.queryFields.get(name);
    if (field === undefined) {
      const accepted = [...route.queryFields.keys()];
      const hint = accepted.length === 0 ? "this route takes none" : `accepted: ${accepted.join(", ")}`;
      throw invalidRequest(`unknown query parameter "${name}"; ${hint}`, name);
    }
    const values = params.getAll(name);
    const where = `query parameter "${name}"`;
    if (field.fieldKind === "list") {
      const list = target.get(field) as ReflectList;
      values.forEach((text, i) => {
        const at = `${where}[${i}]`;
        if (field.listKind === "enum") list.add(enumFromJson(field.enum, text, at));
        else if (field.listKind === "scalar") list.add(scalarFromText(field.scalar, field.longAsString, text, at));
      });
      continue;
    }
    if (values.length > 1) throw invalidRequest(`${where} is given ${values.length} times but takes one value`, name);
    target.set(field, singularFromText(field, values[0] ?? "", where));
  }
}

function singularFromText(field: DescField, text: string, where: string): unknown {
  if (field.fieldKind === "enum") return enumFromJson(field.enum, text, where);
  if (field.fieldKind === "scalar") return scalarFromText(field.scalar, field.longAsString, text, where);
  throw invalidRequest(`${where} cannot be set from text`);
}

function splitUrl(url: string): { path: string; query: string } {
  let target = url;
  if (!target.startsWith("/")) {
    // Absolute-form request targets (proxies) carry scheme and host before the path.
    try {
      const parsed = new URL(target);
      target = parsed.pathname + parsed.search;
    } catch {
      return { path: "", query: "" };
    }
  }
  const q = target.indexOf("?");
  return q === -1 ? { path: target, query: "" } : { path: target.slice(0, q), query: target.slice(q + 1) };
}

/** Response headers of an RPC that a REST answer carries too. */
const PASSED_ON_HEADERS = ["x-gw-guardrails"] as const;

const NO_ANSWER_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

function answerHeaders(header: Headers): Readonly<Record<string, string>> {
  let out: Record<string, string> | null = null;
  for (const name of PASSED_ON_HEADERS) {
    const value = header.get(name);
    if (value !== null) (out ??= {})[name] = value;
  }
  return out ?? NO_ANSWER_HEADERS;
}

function writeError(req: Req, res: Res, err: unknown, headers: Record<string, string> = {}): void {
  const mapped = restErrorResponse(err);
  if (mapped === undefined) throw err;
  headers = { ...mapped.headers, ...headers };
  // Paths under /v1 are read by OpenAI clients, whose error envelope also has `param` and `code`.
  if ((req.url ?? "").startsWith("/v1/")) mapped.body.error = { ...mapped.body.error, param: null, code: mapped.body.error.type };
  // After a 413 the rest of the body is still on the wire, unread.
  if (mapped.status === 413) {
    sendJson(res, mapped.status, mapped.body, headers);
    dropRefusedBody(req, res);
    return;
  }
  sendJson(res, mapped.status, mapped.body, headers);
  // Without a reader an HTTP/2 stream never finishes closing; what still arrives (frames in flight, or
  // the body of a 405) is dropped, not buffered. HTTP/1.1 does this by itself.
  if (isHttp2(req)) req.resume();
}

function isHttp2(req: Req): req is http2.Http2ServerRequest {
  return req.httpVersionMajor >= 2;
}
