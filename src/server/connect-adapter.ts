/**
 * Serves the Connect, gRPC and gRPC-Web procedures the way connectNodeAdapter does, and reads each
 * call's outcome as it goes out (gRPC trailers, the gRPC-Web trailer frame, the Connect end-stream
 * message) so that http_requests_total counts a failed call under the HTTP status its code maps to.
 * On HTTP/1.1 the body of a call with one request message is read here first, within the limit, so a
 * body over it is answered 413 like on every other path, and the rest of it dropped (refused-body.ts).
 */
import type * as http from "node:http";
import { TextDecoder } from "node:util";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { JsonReadOptions, JsonWriteOptions } from "@bufbuild/protobuf";
import { createConnectRouter, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { createAsyncIterable, type UniversalServerRequest, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { endStreamFlag, endStreamFromJson } from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse } from "@connectrpc/connect/protocol-grpc-web";
import { PEER_ADDRESS_HEADER, socketPeerAddress } from "../peer-address.js";
import type { Logger } from "../telemetry/logger.js";
import { fileTrace, TRACE_REF_HEADER, withdrawTrace } from "../telemetry/trace-handoff.js";
import type { TraceNode } from "../telemetry/tracing.js";
import { dropRefusedBody } from "./refused-body.js";
import { ClientClosedError, readBodyBytes } from "./rest/request-body.js";
import { setRpcOutcome } from "./rpc-status.js";
import { sendJson, type Req, type Res } from "./node-http.js";

/** What the adapter serves. */
export interface ConnectAdapterOptions {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
  /** Request messages over this many bytes are refused. */
  readMaxBytes: number;
  /** Serves every path that is not a procedure, with the request's span node when it is traced. */
  fallback: (req: Req, res: Res, trace?: TraceNode) => void;
  logger: Logger;
}

/** Envelope flag of a compressed message (gRPC, gRPC-Web and Connect streams alike). */
const COMPRESSED_FLAG = 0b00000001;
/** Bytes before an envelope's data: one flag byte and a four-byte length. */
const ENVELOPE_HEADER = 5;

/**
 * How Connect reads JSON: unknown fields are refused, as proto3 JSON parsers do by default and as the REST
 * bridge does, so a typo does not pass silently; invalid UTF-8 is refused instead of read as U+FFFD. The
 * router hands these options to its JSON serialization, which also takes the decoder.
 */
const CONNECT_JSON_OPTIONS: Partial<JsonReadOptions & JsonWriteOptions> & { textDecoder: TextDecoder } = {
  ignoreUnknownFields: false,
  textDecoder: new TextDecoder("utf-8", { fatal: true }),
};

/** Builds the handler; it answers the procedures of `routes` and hands every other path to `fallback`. */
export function createConnectAdapter(o: ConnectAdapterOptions): (req: Req, res: Res, trace?: TraceNode) => void {
  const router = createConnectRouter({
    interceptors: o.interceptors,
    readMaxBytes: o.readMaxBytes,
    acceptCompression: [compressionGzip, compressionBrotli],
    jsonOptions: CONNECT_JSON_OPTIONS,
  });
  o.routes(router);
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  return (req, res, trace) => {
    const handler = handlers.get((req.url ?? "").split("?", 1)[0] ?? "");
    if (handler === undefined) {
      o.fallback(req, res, trace);
      return;
    }
    // connect-node's request and response types are the two Node servers' own; both are served here.
    const uReq = universalRequestFromNodeRequest(req as http.IncomingMessage, res as http.ServerResponse, undefined, undefined);
    // The services read the caller's address from this header; the socket's value replaces any the client sent.
    uReq.header.set(PEER_ADDRESS_HEADER, socketPeerAddress(req.socket));
    uReq.header.delete(TRACE_REF_HEADER);
    const serve = (request: UniversalServerRequest): void => {
      const ref = trace === undefined ? undefined : fileTrace(trace);
      if (ref !== undefined) request.header.set(TRACE_REF_HEADER, ref);
      handler(request)
        .then((uRes) => universalResponseToNodeResponse(watchOutcome(uRes, res), res as http.ServerResponse))
        .catch((err: unknown) => {
          o.logger.error({ err, procedure: handler.requestPath }, "RPC handler failed");
        })
        .finally(() => {
          if (ref !== undefined) withdrawTrace(ref);
        });
    };
    // Over HTTP/2 Connect refuses a body over the limit itself, and a stream reset drops the rest.
    const singleRequest = handler.method.methodKind === "unary" || handler.method.methodKind === "server_streaming";
    if (req.httpVersionMajor >= 2 || !singleRequest) {
      serve(uReq);
      return;
    }
    readBodyBytes(req, o.readMaxBytes).then(
      (bytes) => serve({ ...uReq, body: createAsyncIterable([bytes]) }),
      (err: unknown) => {
        if (err instanceof ClientClosedError) return;
        // The Connect protocol's error body, which Connect clients read as resource_exhausted.
        sendJson(res, 413, { code: "resource_exhausted", message: err instanceof Error ? err.message : String(err) });
        dropRefusedBody(req, res);
      },
    );
  };
}

/** How a protocol's response carries the call's outcome when its HTTP status is 200. */
type OutcomeCarrier = "grpc-trailers" | "grpc-web-trailer-frame" | "connect-end-stream";

function carrierOf(contentType: string): OutcomeCarrier | undefined {
  if (contentType.startsWith("application/grpc-web")) return "grpc-web-trailer-frame";
  if (contentType.startsWith("application/grpc")) return "grpc-trailers";
  // Connect unary answers carry no frames: their HTTP status is already the outcome's.
  if (contentType.startsWith("application/connect+")) return "connect-end-stream";
  return undefined;
}

/** The response with its body watched: once the last frame is out, the call's code is recorded on `res`. */
function watchOutcome(uRes: UniversalServerResponse, res: Res): UniversalServerResponse {
  const carrier = carrierOf(uRes.header?.get("content-type") ?? "");
  if (uRes.status !== 200 || carrier === undefined || uRes.body === undefined || !(Symbol.asyncIterator in uRes.body)) return uRes;
  return { ...uRes, body: recordingOutcome(uRes.body, carrier, uRes, res) };
}

async function* recordingOutcome(body: AsyncIterable<Uint8Array>, carrier: OutcomeCarrier, uRes: UniversalServerResponse, res: Res): AsyncGenerator<Uint8Array> {
  let last: Uint8Array | undefined;
  for await (const chunk of body) {
    last = chunk;
    yield chunk;
  }
  // The trailers are complete once the body is.
  let code: number | undefined;
  if (carrier === "grpc-trailers") code = Number(uRes.trailer?.get("grpc-status") ?? "0");
  else if (last !== undefined) code = lastFrameCode(last, carrier, uRes.header);
  if (code !== undefined && Number.isInteger(code)) setRpcOutcome(res, code);
}

/** The code in the last frame of a body: a gRPC-Web trailer frame or a Connect end-stream message. */
function lastFrameCode(frame: Uint8Array, carrier: OutcomeCarrier, header: Headers | undefined): number | undefined {
  const flags = frame[0];
  const wanted = carrier === "grpc-web-trailer-frame" ? trailerFlag : endStreamFlag;
  // Connect-node yields every frame as one chunk, so the last chunk is the last frame.
  if (flags === undefined || frame.length < ENVELOPE_HEADER || (flags & wanted) !== wanted) return undefined;
  let data: Uint8Array = frame.subarray(ENVELOPE_HEADER);
  if ((flags & COMPRESSED_FLAG) === COMPRESSED_FLAG) {
    const encoding = header?.get(carrier === "grpc-web-trailer-frame" ? "grpc-encoding" : "connect-content-encoding");
    if (encoding === "gzip") data = gunzipSync(data);
    else if (encoding === "br") data = brotliDecompressSync(data);
    else return undefined;
  }
  if (carrier === "grpc-web-trailer-frame") return Number(trailerParse(data).get("grpc-status") ?? "0");
  try {
    return endStreamFromJson(data).error?.code ?? 0;
  } catch {
    return undefined;
  }
}
