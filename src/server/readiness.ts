/**
 * Readiness: what the gateway still waits for before it should take traffic (GET /ready), as opposed to
 * liveness (GET /health, which answers as soon as the port is bound). The port is bound before the store
 * opens, so while the gateway starts a handler here answers the two probes and refuses everything else.
 */
import type { RequestHandler } from "./listener.js";
import { sendError, sendJson, type Res } from "./node-http.js";

/** The start-up steps /ready waits for, in the order they finish. */
export type ReadinessCheck = "store" | "catalog" | "mcp_connections";

const CHECKS: readonly ReadinessCheck[] = ["store", "catalog", "mcp_connections"];

/** The /ready body. */
export type ReadinessReport =
  | { status: "ready" }
  | { status: "starting"; pending: ReadinessCheck[]; mcp_clients_connecting?: string[] };

/** Tracks the start-up checks; the app marks each done as it finishes. */
export class Readiness {
  readonly #pending = new Set<ReadinessCheck>(CHECKS);
  #connecting: () => readonly string[] = () => [];
  #onReady: (() => void) | undefined;

  /** `onReady` is called once, when the last check is done. */
  constructor(onReady?: () => void) {
    this.#onReady = onReady;
  }

  /** True once every check is done. */
  get ready(): boolean {
    return this.#pending.size === 0;
  }

  /** Names the MCP clients still making their first connection, for the report. */
  reportConnecting(names: () => readonly string[]): void {
    this.#connecting = names;
  }

  /** Marks a check done. */
  done(check: ReadinessCheck): void {
    if (!this.#pending.delete(check) || this.#pending.size > 0) return;
    const onReady = this.#onReady;
    this.#onReady = undefined;
    onReady?.();
  }

  /** What /ready answers. */
  report(): ReadinessReport {
    if (this.ready) return { status: "ready" };
    const pending = CHECKS.filter((check) => this.#pending.has(check));
    const connecting = this.#pending.has("mcp_connections") ? this.#connecting() : [];
    return connecting.length === 0 ? { status: "starting", pending } : { status: "starting", pending, mcp_clients_connecting: [...connecting] };
  }
}

/** Answers GET /ready: 200 once ready, else 503 naming what is pending. */
export function sendReadiness(res: Res, readiness: Readiness): void {
  const report = readiness.report();
  sendJson(res, report.status === "ready" ? 200 : 503, report, report.status === "ready" ? {} : { "retry-after": "1" });
}

/** The handler while the store opens and the services are wired: the two probes answer, the rest is a 503. */
export function createStartingHandler(readiness: Readiness): RequestHandler {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const probe = req.method === "GET" || req.method === "HEAD";
    if (probe && path === "/health") {
      sendJson(res, 200, { status: "ok" });
    } else if (probe && path === "/ready") {
      sendReadiness(res, readiness);
    } else {
      const pending = readiness.report();
      const waiting = pending.status === "starting" ? pending.pending.join(", ") : "the services";
      res.setHeader("retry-after", "1");
      sendError(res, 503, "gateway_starting", `the gateway is starting (waiting for: ${waiting}); retry shortly`);
    }
  };
}
