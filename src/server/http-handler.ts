/**
 * The request handler both protocol servers share: /health and /openapi.json, then Connect, gRPC and
 * gRPC-Web (connectNodeAdapter), then the REST bridge, then a 404 in the /api envelope.
 */
import type * as http from "node:http";
import type * as http2 from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, Interceptor, Transport } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "../telemetry/logger.js";
import type { RequestHandler } from "./listener.js";
import { buildOpenApi } from "./rest/openapi.js";
import { createRestHandler } from "./rest/rest-handler.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** What the handler serves. */
export interface HttpHandlerOptions {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
  /** The services the REST bridge and /openapi.json expose. */
  services: readonly DescService[];
  /** In-process transport to the same routes and interceptors, for the REST bridge. */
  restTransport: Transport;
  maxBodyBytes: number;
  logger: Logger;
  version: string;
}

/** Writes a JSON body with its length. */
export function sendJson(res: Res, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Writes the /api error envelope. */
export function sendError(res: Res, status: number, type: string, message: string): void {
  sendJson(res, status, { error: { type, message } });
}

/** Builds the handler; route tables and the OpenAPI document are compiled here, once. */
export function createHttpHandler(opts: HttpHandlerOptions): RequestHandler {
  const openapi = JSON.stringify(buildOpenApi(opts.services, { title: "gw AI gateway", version: opts.version }));
  const rest = createRestHandler({ services: opts.services, transport: opts.restTransport, maxBodyBytes: opts.maxBodyBytes });

  const fallback = (req: Req, res: Res): void => {
    rest(req, res)
      .then((handled) => {
        if (handled) return;
        const path = (req.url ?? "/").split("?")[0];
        sendError(res, 404, "not_found", `no route for ${req.method ?? "GET"} ${path}`);
      })
      .catch((err: unknown) => {
        opts.logger.error({ err }, "REST bridge failed");
        if (!res.headersSent) sendError(res, 500, "internal", "internal error: the gateway log has the details");
        else res.end();
      });
  };

  const connect = connectNodeAdapter({
    routes: opts.routes,
    interceptors: opts.interceptors,
    readMaxBytes: opts.maxBodyBytes,
    // connect-node narrows the response's write() signature; the object is the server's own response.
    fallback: (req, res) => fallback(req, res as unknown as Res),
  });

  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/health" && (req.method === "GET" || req.method === "HEAD")) {
      sendJson(res, 200, { status: "ok" });
      return;
    }
    if (path === "/openapi.json" && req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(openapi) });
      res.end(openapi);
      return;
    }
    connect(req, res);
  };
}
