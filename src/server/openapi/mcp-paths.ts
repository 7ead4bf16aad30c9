/**
 * The OpenAPI operations of the gateway's MCP endpoint: Streamable HTTP at /mcp and the legacy HTTP+SSE
 * transport at /mcp/sse + /mcp/messages. Their bodies are MCP JSON-RPC messages, described loosely here.
 */
import type { Schema } from "../rest/openapi.js";
import { ANY_OBJECT, INTEGER, openObject, text } from "./json-schema.js";
import { IDENTIFIED_CALLER } from "./security-schemes.js";

/** A JSON-RPC error answer. */
const RPC_ERROR = (description: string): Schema => ({
  description,
  content: {
    "application/json": {
      schema: openObject({ jsonrpc: text(), id: { type: ["string", "integer", "null"] }, error: openObject({ code: INTEGER, message: text() }, ["code", "message"]) }, ["jsonrpc", "error"]),
    },
  },
});

const SESSION_HEADER: Schema = {
  name: "Mcp-Session-Id",
  in: "header",
  description: "The session id the initialize answer gave (absent on initialize).",
  schema: { type: "string" },
};

const STREAM: Schema = { "text/event-stream": { schema: { type: "string" } } };

const REFUSALS: Record<string, Schema> = {
  "401": RPC_ERROR("An unknown virtual key, or none while client.enforce_governance is on."),
  "403": RPC_ERROR("An inactive virtual key, or a Host or Origin refused by client.allowed_hosts / client.allowed_origins."),
  "404": RPC_ERROR("No such session, or a session another caller opened (-32001)."),
};

/** The path items, by path. */
export const MCP_PATHS: Readonly<Record<string, Record<string, Schema>>> = {
  "/mcp": {
    post: {
      operationId: "Mcp.Post",
      tags: ["MCP"],
      summary: "Send MCP JSON-RPC messages",
      description:
        "Streamable HTTP transport. Start with an initialize request (no Mcp-Session-Id); its answer carries the Mcp-Session-Id to send from then on. tools/list and tools/call serve the caller's tools, named <client>-<tool>.",
      security: IDENTIFIED_CALLER,
      parameters: [SESSION_HEADER],
      requestBody: { required: true, content: { "application/json": { schema: ANY_OBJECT } } },
      responses: {
        "200": { description: "The answers, as JSON or as an event stream.", content: { "application/json": { schema: ANY_OBJECT }, ...STREAM } },
        "202": { description: "Notifications or responses accepted." },
        "400": RPC_ERROR("Not JSON (-32700), not JSON-RPC (-32600), or no session and no initialize."),
        ...REFUSALS,
        "413": RPC_ERROR("The body is larger than client.max_request_body_bytes."),
        "503": RPC_ERROR("The session table is full."),
      },
    },
    get: {
      operationId: "Mcp.Stream",
      tags: ["MCP"],
      summary: "Open the notification stream",
      description: "The session's stream of server notifications (notifications/tools/list_changed) and requests (elicitation).",
      security: IDENTIFIED_CALLER,
      parameters: [{ ...SESSION_HEADER, required: true }],
      responses: { "200": { description: "The stream.", content: STREAM }, ...REFUSALS },
    },
    delete: {
      operationId: "Mcp.Close",
      tags: ["MCP"],
      summary: "End a session",
      security: IDENTIFIED_CALLER,
      parameters: [{ ...SESSION_HEADER, required: true }],
      responses: { "200": { description: "The session is closed." }, ...REFUSALS },
    },
  },
  "/mcp/sse": {
    get: {
      operationId: "Mcp.SseStream",
      tags: ["MCP"],
      summary: "Open a legacy SSE session",
      description: "The HTTP+SSE transport: the first event (endpoint) names the URL to post messages to.",
      security: IDENTIFIED_CALLER,
      responses: { "200": { description: "The session's stream.", content: STREAM }, "401": REFUSALS["401"] as Schema, "403": REFUSALS["403"] as Schema, "503": RPC_ERROR("The session table is full.") },
    },
  },
  "/mcp/messages": {
    post: {
      operationId: "Mcp.SseMessage",
      tags: ["MCP"],
      summary: "Post a message to a legacy SSE session",
      description: "Answers arrive on the session's stream.",
      security: IDENTIFIED_CALLER,
      parameters: [{ name: "sid", in: "query", required: true, description: "The session, as the endpoint event names it.", schema: { type: "string" } }],
      requestBody: { required: true, content: { "application/json": { schema: ANY_OBJECT } } },
      responses: {
        "202": { description: "Accepted." },
        "400": RPC_ERROR("Not JSON (-32700), not JSON-RPC (-32600), or a batch."),
        ...REFUSALS,
        "413": RPC_ERROR("The body is larger than client.max_request_body_bytes."),
      },
    },
  },
};
