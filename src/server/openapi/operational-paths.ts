/**
 * The OpenAPI operations of the gateway's own HTTP endpoints outside the REST bridge and /v1: the
 * liveness and readiness checks and the Prometheus exposition.
 */
import { errorResponse, type Schema } from "../rest/openapi.js";
import { INTEGER, arrayOf, constant, openObject, text } from "./json-schema.js";
import { METRICS, OPEN } from "./security-schemes.js";


// Every request's x-gw-dim-* headers are checked before it is routed, so every path can answer this.
const BAD_DIMENSION = errorResponse("An x-gw-dim-* header names a reserved or invalid label.");

const TEXT = (description: string): Schema => ({ description, content: { "text/plain": { schema: { type: "string" } } } });

/** The path items, by path. */
export const OPERATIONAL_PATHS: Readonly<Record<string, Record<string, Schema>>> = {
  "/health": {
    get: {
      operationId: "Gateway.Health",
      tags: ["Gateway"],
      summary: "Liveness",
      description: "Answers as soon as the gateway serves requests (HEAD too).",
      security: OPEN,
      responses: {
        "200": { description: "Serving.", content: { "application/json": { schema: openObject({ status: constant("ok") }, ["status"]) } } },
        "400": BAD_DIMENSION,
      },
    },
  },
  "/ready": {
    get: {
      operationId: "Gateway.Ready",
      tags: ["Gateway"],
      summary: "Readiness",
      description:
        "503 while the gateway starts (until the store is open, the catalog loaded and every MCP client has made its first connection attempt), then 200 (HEAD too). While it starts, every path but /health and /ready answers 503 `gateway_starting`.",
      security: OPEN,
      responses: {
        "200": { description: "Ready.", content: { "application/json": { schema: openObject({ status: constant("ready") }, ["status"]) } } },
        "400": BAD_DIMENSION,
        "503": {
          description: "Still starting.",
          headers: { "Retry-After": { description: "Seconds to wait before asking again.", schema: INTEGER } },
          content: {
            "application/json": {
              schema: openObject(
                {
                  status: constant("starting"),
                  pending: arrayOf({ type: "string", enum: ["store", "catalog", "mcp_connections"] }),
                  mcp_clients_connecting: arrayOf(text(), { description: "The MCP clients still making their first connection." }),
                },
                ["status", "pending"],
              ),
            },
          },
        },
      },
    },
  },
  "/metrics": {
    get: {
      operationId: "Gateway.Metrics",
      tags: ["Gateway"],
      summary: "Prometheus metrics",
      description: "The Prometheus text exposition format (version 0.0.4) of the gateway's own registry (HEAD too).",
      security: METRICS,
      responses: {
        "200": TEXT("The exposition."),
        "400": BAD_DIMENSION,
        "401": {
          ...TEXT("Admin auth is on and the request lacks the admin credentials."),
          headers: { "WWW-Authenticate": { description: "`Basic realm=\"gw metrics\"`.", schema: { type: "string" } } },
        },
      },
    },
  },
};
