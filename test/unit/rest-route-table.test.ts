import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb.js";
import { SessionService } from "../../gen/gw/admin/v1/session_pb.js";
import { ModelService, ProviderService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { McpToolService } from "../../gen/gw/inference/v1/tool_pb.js";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { GatewayError } from "../../src/errors.js";
import { parsePathTemplate } from "../../src/server/rest/path-template.js";
import { compileRoutes } from "../../src/server/rest/route-table.js";
import { rule, serviceWithRule, serviceWithRules, thingService } from "./rest-test-protos.js";

function refusal(template: string): string {
  const parsed = parsePathTemplate(template);
  assert.equal(parsed.ok, false, `${template} should be refused`);
  return parsed.ok ? "" : parsed.reason;
}

function compileError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof GatewayError, `expected a GatewayError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected compileRoutes to throw");
}

describe("path templates", () => {
  test("parses literal segments and {field} variables", () => {
    assert.deepEqual(parsePathTemplate("/api/mcp/client/{client_id}/close"), {
      ok: true,
      segments: [
        { kind: "literal", value: "api" },
        { kind: "literal", value: "mcp" },
        { kind: "literal", value: "client" },
        { kind: "variable", field: "client_id" },
        { kind: "literal", value: "close" },
      ],
    });
  });

  test("refuses a variable pattern", () => {
    assert.match(refusal("/v1/{name=projects/*}"), /variable patterns/);
  });

  test("refuses a multi-segment wildcard", () => {
    assert.match(refusal("/v1/**"), /wildcard/);
  });

  test("refuses a single-segment wildcard", () => {
    assert.match(refusal("/v1/*/things"), /wildcard/);
  });

  test("refuses a custom verb", () => {
    assert.match(refusal("/v1/things/{id}:cancel"), /custom verbs/);
  });

  test("refuses a nested field path", () => {
    assert.match(refusal("/v1/{thing.id}"), /nested field path/);
  });

  test("refuses a trailing slash", () => {
    assert.match(refusal("/v1/things/"), /empty path segments/);
  });

  test("refuses a template without a leading slash", () => {
    assert.match(refusal("v1/things"), /must start with \//);
  });

  test("refuses a segment mixing literal text and a variable", () => {
    assert.match(refusal("/v1/thing-{id}"), /mixes a variable/);
  });

  test("refuses the same variable twice", () => {
    assert.match(refusal("/v1/{id}/{id}"), /appears twice/);
  });
});

describe("compileRoutes", () => {
  test("compiles every annotated method of the real services", () => {
    const table = compileRoutes([
      McpClientService,
      SettingsService,
      SessionService,
      ProviderService,
      ModelService,
      CredentialService,
      McpToolService,
      GovernanceService,
    ]);
    const templates = table.routes.map((r) => `${r.httpMethod} ${r.template}`);
    assert.ok(templates.includes("PUT /api/mcp/client/{client_id}"));
    assert.ok(templates.includes("PATCH /config"));
    assert.ok(templates.includes("POST /v1/mcp/tool/execute"));
    assert.ok(templates.includes("GET /api/mcp/per-user-headers/flows/{flow_id}"));
  });

  test("skips methods without an http rule", () => {
    const table = compileRoutes([thingService()]);
    assert.equal(table.routes.some((r) => r.method.name === "Ping"), false);
  });

  test("prefers a literal segment over a variable", () => {
    const found = compileRoutes([thingService()]).match("GET", "/things/special");
    assert.equal(found.kind, "found");
    assert.equal(found.kind === "found" && found.route.method.name, "SpecialThing");
  });

  test("matches a variable segment when no literal fits", () => {
    const found = compileRoutes([thingService()]).match("GET", "/things/abc");
    assert.equal(found.kind === "found" && found.route.method.name, "GetThing");
    assert.equal(found.kind === "found" && found.params[0]?.raw, "abc");
  });

  test("reports the allowed methods for a path bound only to other methods, HEAD beside GET", () => {
    const found = compileRoutes([thingService()]).match("DELETE", "/things/abc");
    assert.deepEqual(found, { kind: "method_not_allowed", allow: ["GET", "HEAD", "PATCH"] });
  });

  test("serves HEAD with the GET binding", () => {
    const found = compileRoutes([thingService()]).match("HEAD", "/things/abc");
    assert.equal(found.kind === "found" && found.route.method.name, "GetThing");
  });

  test("does not match a path no template covers", () => {
    assert.equal(compileRoutes([thingService()]).match("GET", "/things/a/b").kind, "none");
  });

  test("does not let a variable match an empty segment", () => {
    assert.equal(compileRoutes([thingService()]).match("GET", "/things/").kind, "none");
  });

  test("offers scalar fields bound to neither path nor body as query parameters", () => {
    const route = compileRoutes([thingService()]).routes.find((r) => r.method.name === "GetThing");
    assert.deepEqual([...(route?.queryFields.keys() ?? [])], ["color", "tags", "since", "verbose"]);
  });

  test("derives update_mask only for a body naming a field", () => {
    const routes = compileRoutes([thingService()]).routes;
    assert.equal(routes.find((r) => r.method.name === "UpdateThing")?.updateMaskField?.name, "update_mask");
  });

  test("throws for a template with a variable pattern", () => {
    const err = compileError(() => compileRoutes([serviceWithRule(rule("get", "/things/{id=**}"))]));
    assert.match(err.message, /test\.v1\.ThingService\.Only/);
    assert.match(err.message, /variable patterns/);
  });

  test("throws for a custom verb", () => {
    assert.match(compileError(() => compileRoutes([serviceWithRule(rule("post", "/things/{id}:run"))])).message, /custom verbs/);
  });

  test("throws for a custom HTTP method", () => {
    const svc = serviceWithRule({ pattern: { case: "custom", value: { kind: "HEAD", path: "/things" } } });
    assert.match(compileError(() => compileRoutes([svc])).message, /custom HTTP method "HEAD"/);
  });

  test("throws for a variable that is not a field of the request", () => {
    assert.match(compileError(() => compileRoutes([serviceWithRule(rule("get", "/things/{nope}"))])).message, /not a field/);
  });

  test("throws for a variable bound to a message field", () => {
    const err = compileError(() => compileRoutes([serviceWithRule(rule("get", "/things/{inner}"))]));
    assert.match(err.message, /singular scalar or enum/);
  });

  test("throws for a body naming a missing field", () => {
    const err = compileError(() => compileRoutes([serviceWithRule(rule("post", "/things", "nope"))]));
    assert.match(err.message, /body "nope" is not a field/);
  });

  test("throws for a body naming a scalar field", () => {
    const err = compileError(() => compileRoutes([serviceWithRule(rule("post", "/things", "id"))]));
    assert.match(err.message, /singular message field/);
  });

  test("throws for a GET rule with a body", () => {
    assert.match(compileError(() => compileRoutes([serviceWithRule(rule("get", "/things", "*"))])).message, /GET rule cannot have a body/);
  });

  test("throws for response_body", () => {
    const err = compileError(() => compileRoutes([serviceWithRule(rule("get", "/things", "", { responseBody: "id" }))]));
    assert.match(err.message, /response_body/);
  });

  test("throws for a streaming method", () => {
    const err = compileError(() => compileRoutes([serviceWithRule(rule("get", "/things"), { streaming: true })]));
    assert.match(err.message, /server_streaming methods cannot be served/);
  });

  test("throws for two rules with the same method and template", () => {
    const err = compileError(() => compileRoutes([serviceWithRules(rule("get", "/things/{id}"), rule("get", "/things/{id}"))]));
    assert.match(err.message, /also bound by test\.v1\.ThingService\.First/);
  });

  test("throws for two rules whose templates differ only in variable names", () => {
    const err = compileError(() => compileRoutes([serviceWithRules(rule("get", "/things/{id}"), rule("get", "/things/{color}"))]));
    assert.match(err.message, /also bound by/);
  });

  test("serves additional bindings", () => {
    const svc = serviceWithRule(rule("get", "/things/{id}", "", { additionalBindings: [rule("get", "/v2/things/{id}")] }));
    assert.deepEqual(compileRoutes([svc]).routes.map((r) => r.template), ["/things/{id}", "/v2/things/{id}"]);
  });

  test("throws for nested additional bindings", () => {
    const nested = rule("get", "/v2/things/{id}", "", { additionalBindings: [rule("get", "/v3/things/{id}")] });
    const svc = serviceWithRule(rule("get", "/things/{id}", "", { additionalBindings: [nested] }));
    assert.match(compileError(() => compileRoutes([svc])).message, /must not nest/);
  });
});
