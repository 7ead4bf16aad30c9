/**
 * The whole OpenAPI document of GET /openapi.json: the REST bridge's generated paths, the /v1 inference
 * endpoints, /health, /ready and /metrics, the MCP endpoint, and the security schemes. The server and `npm run
 * lint:openapi` both build it here, so what is linted is what is served.
 */
import type { DescService } from "@bufbuild/protobuf";
import { buildOpenApi, type OpenApiDocument, type Schema } from "../rest/openapi.js";
import { compileRoutes, type RouteTable } from "../rest/route-table.js";
import { INFERENCE_PATHS, INFERENCE_SCHEMAS } from "./inference-paths.js";
import { MCP_PATHS } from "./mcp-paths.js";
import { OPERATIONAL_PATHS } from "./operational-paths.js";
import { rpcFacts } from "./rpc-facts.js";
import { SECURITY_SCHEMES } from "./security-schemes.js";

const TITLE = "gw AI gateway";

/** Builds the document of a gateway serving `services`; throws like compileRoutes for a rule the bridge cannot serve. */
export function buildGatewayOpenApi(services: readonly DescService[], version: string, table: RouteTable = compileRoutes(services)): OpenApiDocument {
  const rest = buildOpenApi(services, { title: TITLE, version }, table, rpcFacts);
  // The hand-written inference paths replace a generated path of the same name.
  const paths = { ...rest.paths, ...INFERENCE_PATHS, ...OPERATIONAL_PATHS, ...MCP_PATHS };
  return {
    openapi: rest.openapi,
    info: {
      ...rest.info,
      description:
        "Admin APIs under /api (generated from the Protobuf services, which Connect, gRPC and gRPC-Web serve on the same port), OpenAI-compatible inference under /v1, the Anthropic Messages API for coding agents under /anthropic, the gateway's MCP endpoint at /mcp, and its health, readiness and metrics.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    // Relative: the document is served by the gateway it describes, at whatever address it was reached by.
    servers: [{ url: "/", description: "This gateway" }],
    paths,
    components: {
      ...rest.components,
      schemas: referencedSchemas(paths, { ...rest.components.schemas, ...INFERENCE_SCHEMAS }),
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

const SCHEMA_REF = /"#\/components\/schemas\/([^"]+)"/g;

/**
 * The schemas the paths refer to, directly or through other schemas: a generated path a hand-written
 * one replaces (GET /anthropic/v1/models) leaves its messages' schemas unused, and the linter flags those.
 */
function referencedSchemas(paths: Record<string, unknown>, schemas: Record<string, Schema>): Record<string, Schema> {
  const kept: Record<string, Schema> = {};
  const pending = [JSON.stringify(paths)];
  for (let text = pending.pop(); text !== undefined; text = pending.pop()) {
    for (const match of text.matchAll(SCHEMA_REF)) {
      const name = match[1] as string;
      if (name in kept || !(name in schemas)) continue;
      kept[name] = schemas[name] as Schema;
      pending.push(JSON.stringify(schemas[name]));
    }
  }
  return kept;
}
