/** Shared set-up for the REST bridge tests: fake services behind a real node:http server on port 0. */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import { createRouterTransport, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { createRestHandler } from "../../src/server/rest/rest-handler.js";

/** A running bridge. */
export interface Bridge {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Starts a real HTTP server whose only handler is the bridge (unmatched paths get a bare 404). */
export async function startBridge(options: {
  services: readonly DescService[];
  routes: (router: ConnectRouter) => void;
  interceptors?: Interceptor[];
  maxBodyBytes?: number;
}): Promise<Bridge> {
  const transport = createRouterTransport(options.routes, { router: { interceptors: options.interceptors ?? [] } });
  const rest = createRestHandler({ services: options.services, transport, maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024 });
  const server = http.createServer((req, res) => {
    rest(req, res)
      .then((handled) => {
        if (!handled) {
          res.statusCode = 404;
          res.end("no route");
        }
      })
      .catch(() => {
        res.statusCode = 500;
        res.end("bridge threw");
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends a request and returns status, headers and the parsed JSON body (undefined when not JSON). */
export async function call(
  bridge: Bridge,
  method: string,
  path: string,
  body?: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: any }> { // any: tests index into arbitrary response shapes
  const init: RequestInit = { method, headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers } };
  if (body !== undefined) init.body = body;
  const res = await fetch(bridge.url + path, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json };
}
