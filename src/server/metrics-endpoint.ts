/**
 * GET /metrics: the Prometheus text exposition of the gateway's own registry. With auth_config enabled
 * it needs HTTP basic auth with the admin credentials (docs/telemetry.md), so a scraper sends them.
 */
import type { Metrics } from "../telemetry/metrics.js";
import type { Req, Res } from "./node-http.js";

/** What the endpoint needs from admin auth. */
export interface BasicAuthCheck {
  /** True when the Authorization header carries the admin credentials, or auth is disabled. */
  checkBasic(authorization: string | null | undefined): boolean;
}

function sendText(res: Res, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Builds the /metrics handler. */
export function createMetricsEndpoint(metrics: Metrics, auth: BasicAuthCheck): (req: Req, res: Res) => void {
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      sendText(res, 405, "method not allowed: /metrics answers GET and HEAD\n", { allow: "GET, HEAD" });
      return;
    }
    if (!auth.checkBasic(req.headers.authorization)) {
      sendText(res, 401, "/metrics requires HTTP basic auth with the admin username and password\n", {
        "www-authenticate": 'Basic realm="gw metrics", charset="UTF-8"',
      });
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => {
        res.writeHead(200, { "content-type": contentType, "content-length": Buffer.byteLength(body) });
        if (req.method === "HEAD") res.end();
        else res.end(body);
      },
      (err: unknown) => {
        const message = err instanceof Error ? err.message : String(err);
        if (!res.headersSent) sendText(res, 500, `metrics could not be collected: ${message}\n`);
        else res.end();
      },
    );
  };
}
