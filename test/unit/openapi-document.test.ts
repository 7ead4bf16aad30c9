import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { SessionService } from "../../gen/gw/admin/v1/session_pb.js";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb.js";
import { ModelService, ProviderService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { McpToolService } from "../../gen/gw/inference/v1/tool_pb.js";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { buildGatewayOpenApi } from "../../src/server/openapi/gateway-document.js";

// any: the document is plain JSON that the tests walk by key.
type Doc = any;

const services = [McpClientService, SettingsService, SessionService, McpToolService, CredentialService, ProviderService, GovernanceService, ModelService];
const doc: Doc = buildGatewayOpenApi(services, "1.2.3");
const schemas = doc.components.schemas;

function errorSchemaOf(op: Doc, status: string): string {
  return op.responses[status].content["application/json"].schema.$ref;
}

describe("buildGatewayOpenApi", () => {
  test("covers POST /v1/chat/completions and POST /v1/responses with OpenAI request schemas", () => {
    assert.deepEqual(doc.paths["/v1/chat/completions"].post.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/ChatCompletionRequest" });
    assert.deepEqual(doc.paths["/v1/responses"].post.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/ResponsesRequest" });
  });

  test("answers the inference paths with JSON or, for stream: true, an event stream", () => {
    for (const path of ["/v1/chat/completions", "/v1/responses"]) {
      assert.deepEqual(Object.keys(doc.paths[path].post.responses["200"].content), ["application/json", "text/event-stream"], path);
    }
    assert.equal(schemas.ChatCompletionRequest.properties.stream.type, "boolean");
  });

  test("covers POST /v1/embeddings with a JSON-only answer", () => {
    const op = doc.paths["/v1/embeddings"].post;
    assert.deepEqual(op.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/EmbeddingsRequest" });
    assert.deepEqual(Object.keys(op.responses["200"].content), ["application/json"]);
    assert.deepEqual(schemas.EmbeddingsRequest.required, ["model", "input"]);
  });

  test("marks the fields the inference paths require", () => {
    assert.deepEqual(schemas.ChatCompletionRequest.required, ["model", "messages"]);
    assert.deepEqual(schemas.ResponsesRequest.required, ["model", "input"]);
  });

  test("covers the bridged caller paths", () => {
    assert.ok(doc.paths["/v1/models"].get);
    assert.ok(doc.paths["/anthropic/v1/models"].get);
    assert.equal(errorSchemaOf(doc.paths["/v1/models/{id}"].get, "404"), "#/components/schemas/OpenAIError");
    assert.ok(doc.paths["/v1/mcp/tool/execute"].post);
  });

  test("covers /health, /ready and /metrics", () => {
    assert.ok(doc.paths["/health"].get.responses["200"]);
    assert.deepEqual(Object.keys(doc.paths["/ready"].get.responses).filter((s) => s !== "400"), ["200", "503"]);
    assert.deepEqual(Object.keys(doc.paths["/metrics"].get.responses["200"].content), ["text/plain"]);
  });

  test("covers the MCP endpoint's two transports", () => {
    assert.deepEqual(Object.keys(doc.paths["/mcp"]).sort(), ["delete", "get", "post"]);
    assert.ok(doc.paths["/mcp/sse"].get);
    assert.ok(doc.paths["/mcp/messages"].post);
    assert.ok(doc.paths["/mcp"].post.responses["404"], "another caller's session is a 404");
  });

  test("marks REQUIRED fields of the admin messages required", () => {
    assert.deepEqual(schemas["gw.admin.v1.McpClient"].required, ["name", "connection_type"]);
    assert.ok(schemas["gw.routing.v1.VirtualKey"].required.includes("name"));
  });

  test("gives the inference paths the OpenAI error envelope for each 4xx they can answer", () => {
    const op = doc.paths["/v1/chat/completions"].post;
    assert.deepEqual(Object.keys(op.responses).filter((s) => s.startsWith("4")), ["400", "401", "402", "403", "413", "415", "429"]);
    assert.equal(errorSchemaOf(op, "429"), "#/components/schemas/OpenAIError");
    assert.deepEqual(schemas.OpenAIError.properties.error.properties.param.type, ["string", "null"]);
  });

  test("covers the Anthropic Messages endpoints with Anthropic schemas and error envelope", () => {
    const messages = doc.paths["/anthropic/v1/messages"].post;
    assert.deepEqual(messages.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/MessagesRequest" });
    assert.deepEqual(Object.keys(messages.responses["200"].content), ["application/json", "text/event-stream"]);
    assert.deepEqual(schemas.MessagesRequest.required, ["model", "max_tokens", "messages"]);
    assert.equal(errorSchemaOf(messages, "401"), "#/components/schemas/AnthropicError");
    const count = doc.paths["/anthropic/v1/messages/count_tokens"].post;
    assert.deepEqual(count.responses["200"].content["application/json"].schema, { $ref: "#/components/schemas/CountTokensResponse" });
    assert.equal(errorSchemaOf(count, "400"), "#/components/schemas/AnthropicError");
    assert.deepEqual(schemas.CountTokensRequest.required, ["model", "messages"]);
  });

  test("gives the bridged paths the /api error envelope for each 4xx they can answer", () => {
    const op = doc.paths["/api/mcp/client"].post;
    assert.deepEqual(Object.keys(op.responses).filter((s) => s.startsWith("4")), ["400", "401", "403", "409", "413", "415", "422"]);
    assert.equal(errorSchemaOf(op, "409"), "#/components/schemas/Error");
  });

  test("declares bearer and basic security schemes", () => {
    const { adminSession, virtualKey, metricsBasic } = doc.components.securitySchemes;
    assert.deepEqual([adminSession.scheme, virtualKey.scheme, metricsBasic.scheme], ["bearer", "bearer", "basic"]);
  });

  test("asks an admin session of admin operations and none of sign-in", () => {
    assert.deepEqual(doc.paths["/api/mcp/clients"].get.security, [{ adminSession: [] }]);
    assert.deepEqual(doc.paths["/api/session/login"].post.security, []);
  });

  test("takes an optional virtual key on the inference paths and basic auth on /metrics", () => {
    const security = doc.paths["/v1/chat/completions"].post.security;
    assert.ok(security.some((s: Doc) => "virtualKey" in s));
    assert.ok(security.some((s: Doc) => Object.keys(s).length === 0));
    assert.deepEqual(doc.paths["/metrics"].get.security, [{ metricsBasic: [] }]);
  });

  test("resolves every $ref to a component", () => {
    for (const ref of JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? []) {
      const name = ref.slice('"$ref":"#/components/schemas/'.length, -1);
      assert.ok(name in schemas, `${ref} resolves`);
    }
  });
});
