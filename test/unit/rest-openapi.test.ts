import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb.js";
import { ModelService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { GatewayError } from "../../src/errors.js";
import { buildOpenApi } from "../../src/server/rest/openapi.js";
import { rule, serviceWithRule, thingService } from "./rest-test-protos.js";

// any: the document is plain JSON that the tests walk by key.
type Doc = any;

const info = { title: "gw", version: "1.2.3" };
const doc: Doc = buildOpenApi([McpClientService, SettingsService, ModelService, CredentialService], info);
const schemas = doc.components.schemas;

describe("buildOpenApi", () => {
  test("declares OpenAPI 3.1 with the given info", () => {
    assert.equal(doc.openapi, "3.1.0");
    assert.deepEqual(doc.info, info);
  });

  test("has one path item per rule template, with each bound method", () => {
    assert.deepEqual(Object.keys(doc.paths["/api/mcp/client/{client_id}"]).sort(), ["delete", "get", "put"]);
    assert.ok(doc.paths["/config"].get);
    assert.ok(doc.paths["/config"].patch);
    assert.ok(doc.paths["/v1/models"].get);
  });

  test("names operations <Service>.<Method>", () => {
    assert.equal(doc.paths["/api/mcp/client"].post.operationId, "McpClientService.CreateMcpClient");
  });

  test("declares path variables as required path parameters", () => {
    const [param] = doc.paths["/api/mcp/client/{client_id}"].delete.parameters;
    assert.deepEqual(param, { name: "client_id", in: "path", required: true, schema: { type: "string" } });
  });

  test("declares query parameters typed by their fields", () => {
    const params = doc.paths["/api/mcp/clients"].get.parameters;
    assert.deepEqual(
      params.map((p: Doc) => [p.name, p.in, p.schema.type]),
      [
        ["limit", "query", "integer"],
        ["offset", "query", "integer"],
        ["search", "query", "string"],
      ],
    );
  });

  test("describes a body field's message as the request body", () => {
    const body = doc.paths["/api/mcp/client"].post.requestBody;
    assert.deepEqual(body.content["application/json"].schema, { $ref: "#/components/schemas/gw.admin.v1.McpClient" });
  });

  test("leaves path-bound fields out of a body:\"*\" request body", () => {
    const schema = doc.paths["/api/mcp/per-user-headers/flows/{flow_id}"].put.requestBody.content["application/json"].schema;
    assert.deepEqual(Object.keys(schema.properties), ["headers"]);
  });

  test("has no request body for a rule without one", () => {
    assert.equal(doc.paths["/api/mcp/clients"].get.requestBody, undefined);
  });

  test("references the response message and the error envelope", () => {
    const responses = doc.paths["/api/mcp/clients"].get.responses;
    assert.deepEqual(responses["200"].content["application/json"].schema, { $ref: "#/components/schemas/gw.admin.v1.ListMcpClientsResponse" });
    assert.deepEqual(responses.default.content["application/json"].schema, { $ref: "#/components/schemas/Error" });
  });

  test("names message properties by their proto field names", () => {
    const props = Object.keys(schemas["gw.admin.v1.McpClient"].properties);
    assert.ok(props.includes("client_id"));
    assert.ok(props.includes("tools_to_auto_execute"));
    assert.ok(props.includes("node_states"));
  });

  test("lists enum values by their REST names", () => {
    assert.deepEqual(schemas["gw.admin.v1.ConnectionType"].enum, ["unspecified", "http", "sse", "stdio"]);
    assert.match(schemas["gw.admin.v1.ConnectionType"].description, /"unspecified" only appears in responses/);
  });

  test("describes maps, lists, well-known types and int64", () => {
    const client = schemas["gw.admin.v1.McpClient"].properties;
    assert.deepEqual(client.node_states, { type: "object", additionalProperties: { $ref: "#/components/schemas/gw.admin.v1.NodeState" }, readOnly: true });
    assert.deepEqual(client.tools_to_execute, { type: "array", items: { type: "string" } });
    assert.deepEqual(client.created_at, { type: "string", format: "date-time", readOnly: true });
    assert.deepEqual(schemas["gw.admin.v1.Tool"].properties.input_schema, { type: "object", additionalProperties: true });
    assert.deepEqual(schemas["gw.catalog.v1.Model"].properties.created, { type: ["integer", "string"], format: "int64" });
  });

  test("defines the error envelope", () => {
    assert.deepEqual(schemas.Error.required, ["error"]);
    assert.deepEqual(schemas.Error.properties.error.required, ["type", "message"]);
  });

  test("resolves every $ref to a component", () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    assert.ok(refs.length > 0);
    for (const ref of refs) {
      const name = ref.slice('"$ref":"#/components/schemas/'.length, -1);
      assert.ok(name in schemas, `${ref} resolves`);
    }
  });

  test("takes descriptions from proto comments when the descriptor has them", () => {
    const withComments: Doc = buildOpenApi([thingService({ withComments: true })], info);
    const op = withComments.paths["/things/{id}"].get;
    assert.equal(op.summary, "GetThing reads one thing.");
    assert.equal(op.description, "GetThing reads one thing.\nMore detail here.");
    assert.equal(withComments.components.schemas["test.v1.Thing"].description, "Thing is a thing.");
    assert.equal(withComments.components.schemas["test.v1.Thing"].properties.id.description, "id identifies the thing.");
    assert.match(withComments.components.schemas["test.v1.Color"].description, /^Color is a color\./);
  });

  test("omits descriptions when the descriptor has no comments", () => {
    const bare: Doc = buildOpenApi([thingService()], info);
    assert.equal(bare.paths["/things/{id}"].get.description, undefined);
    assert.equal(bare.components.schemas["test.v1.Thing"].description, undefined);
  });

  test("marks REQUIRED fields required", () => {
    assert.deepEqual(schemas["gw.admin.v1.McpClient"].required, ["name", "connection_type"]);
  });

  test("marks OUTPUT_ONLY fields readOnly", () => {
    assert.equal(schemas["gw.admin.v1.McpClient"].properties.client_id.readOnly, true);
    assert.equal(schemas["gw.admin.v1.McpClient"].properties.name.readOnly, undefined);
  });

  test("marks INPUT_ONLY fields writeOnly", () => {
    assert.equal(schemas["gw.admin.v1.McpClient"].properties.user_headers.writeOnly, true);
  });

  test("notes IMMUTABLE fields in their description", () => {
    assert.match(schemas["gw.admin.v1.McpClient"].properties.connection_string.description, /^Immutable/);
  });

  test("requires nothing in the body of an update, whose mask is the body's keys", () => {
    const schema = doc.paths["/api/mcp/client/{client_id}"].put.requestBody.content["application/json"].schema;
    assert.equal(schema.required, undefined);
    assert.ok("name" in schema.properties);
  });

  test("lists 400 on every operation, and 413 and 415 where a body is read", () => {
    assert.deepEqual(Object.keys(doc.paths["/api/mcp/clients"].get.responses), ["200", "400", "default"]);
    assert.deepEqual(Object.keys(doc.paths["/api/mcp/client"].post.responses), ["200", "400", "413", "415", "default"]);
  });

  test("adds the security and errors the caller knows of an operation", () => {
    const withFacts: Doc = buildOpenApi([McpClientService], info, undefined, () => ({ security: [{ adminSession: [] }], errors: { 409: "taken" } }));
    const op = withFacts.paths["/api/mcp/client"].post;
    assert.deepEqual(op.security, [{ adminSession: [] }]);
    assert.deepEqual(op.responses["409"], { description: "taken", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } });
  });

  test("summarizes an operation by its method name when the descriptor has no comments", () => {
    assert.equal(doc.paths["/api/mcp/client"].post.summary, "Create mcp client");
  });

  test("throws for a rule the bridge cannot serve", () => {
    assert.throws(() => buildOpenApi([serviceWithRule(rule("get", "/things/{id=*}"))], info), GatewayError);
  });
});
