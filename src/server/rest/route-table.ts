/**
 * The REST route table, compiled once at start-up from the `google.api.http` annotations. A rule the
 * bridge cannot serve throws here, so a bad annotation stops start-up instead of misrouting requests.
 */
import {
  getOption,
  hasOption,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
} from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import { GatewayError } from "../../errors.js";
import { parsePathTemplate, type TemplateSegment } from "./path-template.js";
import { FIELD_MASK_TYPE } from "../../proto-json/well-known.js";

/** The HTTP methods a rule can bind. */
export type HttpMethod = "GET" | "PUT" | "POST" | "DELETE" | "PATCH";

/** A singular message field of the request, which the whole JSON body becomes. */
export type MessageField = DescField & { fieldKind: "message" };

/** Where the JSON body goes: nowhere, the whole request message, or one message field of it. */
export type BodyRule = { kind: "none" } | { kind: "all" } | { kind: "field"; field: MessageField };

/** One servable binding of an RPC to an HTTP method and path template. */
export interface RestRoute {
  readonly httpMethod: HttpMethod;
  readonly template: string;
  readonly segments: readonly TemplateSegment[];
  readonly service: DescService;
  readonly method: DescMethodUnary;
  /** Template variable name -> the top-level request field it sets. */
  readonly pathFields: ReadonlyMap<string, DescField>;
  readonly body: BodyRule;
  /** Query parameter name -> field: scalar and repeated-scalar fields bound to neither path nor body. */
  readonly queryFields: ReadonlyMap<string, DescField>;
  /** The request's `update_mask`, when it is filled from the JSON keys of a body field. */
  readonly updateMaskField: MessageField | undefined;
}

/** One path variable of a match, still percent-encoded. */
export interface PathParam {
  readonly field: DescField;
  readonly raw: string;
}

/** The outcome of matching a request against the table. */
export type RouteMatch =
  | { kind: "found"; route: RestRoute; params: readonly PathParam[] }
  | { kind: "method_not_allowed"; allow: readonly (HttpMethod | "HEAD")[] }
  | { kind: "none" };

/** The compiled table. */
export interface RouteTable {
  readonly routes: readonly RestRoute[];
  /** Matches a method and a raw (still percent-encoded) path without its query string. */
  match(method: string, path: string): RouteMatch;
}

interface TrieNode {
  readonly literals: Map<string, TrieNode>;
  variable: TrieNode | undefined;
  readonly routes: Map<HttpMethod, RestRoute>;
}

/** Compiles every annotated method of the services; throws a GatewayError naming the rule it cannot serve. */
export function compileRoutes(services: readonly DescService[]): RouteTable {
  const routes: RestRoute[] = [];
  const byShape = new Map<string, RestRoute>();
  const root = newNode();
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const rule = getOption(method, http);
      for (const [index, binding] of [rule, ...rule.additionalBindings].entries()) {
        if (index > 0 && binding.additionalBindings.length > 0) {
          throw ruleError(method, "additional_bindings must not nest additional_bindings");
        }
        const route = compileBinding(service, method, binding);
        const shape = `${route.httpMethod} ${shapeOf(route.segments)}`;
        const clash = byShape.get(shape);
        if (clash !== undefined) {
          throw ruleError(
            method,
            `${route.httpMethod} ${route.template} is also bound by ${clash.method.parent.typeName}.${clash.method.name} (${clash.template})`,
          );
        }
        byShape.set(shape, route);
        routes.push(route);
        insert(root, route);
      }
    }
  }
  return { routes, match: (method, path) => match(root, method, path) };
}

function compileBinding(service: DescService, method: DescMethod, rule: HttpRule): RestRoute {
  const pattern = rule.pattern;
  if (pattern.case === undefined) throw ruleError(method, "the rule has no get/put/post/delete/patch pattern");
  if (pattern.case === "custom") throw ruleError(method, `custom HTTP method "${pattern.value.kind}" is not supported`);
  const httpMethod = pattern.case.toUpperCase() as HttpMethod;
  const template = pattern.value;
  if (method.methodKind !== "unary") {
    throw ruleError(method, `${method.methodKind} methods cannot be served over REST; only unary ones`, template);
  }
  if (rule.responseBody !== "") throw ruleError(method, "response_body is not supported", template);
  const parsed = parsePathTemplate(template);
  if (!parsed.ok) throw ruleError(method, parsed.reason, template);

  const input = method.input;
  const pathFields = new Map<string, DescField>();
  for (const segment of parsed.segments) {
    if (segment.kind !== "variable") continue;
    const field = topLevelField(input, segment.field);
    if (field === undefined) throw ruleError(method, `{${segment.field}} is not a field of ${input.typeName}`, template);
    if (field.fieldKind !== "scalar" && field.fieldKind !== "enum") {
      throw ruleError(method, `{${segment.field}} must be a singular scalar or enum field`, template);
    }
    pathFields.set(segment.field, field);
  }

  const body = bodyRule(method, rule.body, httpMethod, pathFields, template);
  const queryFields = new Map<string, DescField>();
  if (body.kind !== "all") {
    for (const field of input.fields) {
      if (pathFields.has(field.name) || (body.kind === "field" && body.field === field)) continue;
      if (isQueryable(field)) queryFields.set(field.name, field);
    }
  }
  return {
    httpMethod,
    template,
    segments: parsed.segments,
    service,
    method: method as DescMethodUnary,
    pathFields,
    body,
    queryFields,
    updateMaskField: body.kind === "field" ? updateMaskField(input) : undefined,
  };
}

function bodyRule(
  method: DescMethod,
  body: string,
  httpMethod: HttpMethod,
  pathFields: ReadonlyMap<string, DescField>,
  template: string,
): BodyRule {
  if (body === "") return { kind: "none" };
  if (httpMethod === "GET") throw ruleError(method, "a GET rule cannot have a body", template);
  if (body === "*") return { kind: "all" };
  const field = topLevelField(method.input, body);
  if (field === undefined) throw ruleError(method, `body "${body}" is not a field of ${method.input.typeName}`, template);
  if (field.fieldKind !== "message") throw ruleError(method, `body "${body}" must be a singular message field`, template);
  if (pathFields.has(body)) throw ruleError(method, `body "${body}" is also bound to the path`, template);
  return { kind: "field", field };
}

function updateMaskField(input: DescMessage): MessageField | undefined {
  const field = topLevelField(input, "update_mask");
  return field?.fieldKind === "message" && field.message.typeName === FIELD_MASK_TYPE ? field : undefined;
}

function isQueryable(field: DescField): boolean {
  switch (field.fieldKind) {
    case "scalar":
    case "enum":
      return true;
    case "list":
      return field.listKind !== "message";
    default:
      return false;
  }
}

function topLevelField(desc: DescMessage, name: string): DescField | undefined {
  return desc.fields.find((f) => f.name === name);
}

function shapeOf(segments: readonly TemplateSegment[]): string {
  return "/" + segments.map((s) => (s.kind === "literal" ? s.value : "{}")).join("/");
}

function ruleError(method: DescMethod, reason: string, template?: string): GatewayError {
  const where = template === undefined ? "" : ` ("${template}")`;
  return new GatewayError(
    "failed_precondition",
    `google.api.http rule of ${method.parent.typeName}.${method.name}${where}: ${reason}`,
    { type: "invalid_http_rule" },
  );
}

function newNode(): TrieNode {
  return { literals: new Map(), variable: undefined, routes: new Map() };
}

function insert(root: TrieNode, route: RestRoute): void {
  let node = root;
  for (const segment of route.segments) {
    if (segment.kind === "literal") {
      let next = node.literals.get(segment.value);
      if (next === undefined) node.literals.set(segment.value, (next = newNode()));
      node = next;
    } else {
      node = node.variable ??= newNode();
    }
  }
  node.routes.set(route.httpMethod, route);
}

function match(root: TrieNode, method: string, path: string): RouteMatch {
  if (!path.startsWith("/")) return { kind: "none" };
  const parts = path.slice(1).split("/");
  const candidates: TrieNode[] = [];
  collect(root, parts, 0, candidates);
  if (candidates.length === 0) return { kind: "none" };
  // HEAD is served by the GET binding, as HTTP asks of every GET resource; Node's response then sends no body.
  const bound = (method === "HEAD" ? "GET" : method) as HttpMethod;
  // Candidates come literal-first, so the first one with this method is the most specific binding.
  for (const node of candidates) {
    const route = node.routes.get(bound);
    if (route !== undefined) return { kind: "found", route, params: paramsOf(route, parts) };
  }
  const allow = new Set<HttpMethod | "HEAD">();
  for (const node of candidates) for (const m of node.routes.keys()) allow.add(m);
  if (allow.has("GET")) allow.add("HEAD");
  return { kind: "method_not_allowed", allow: [...allow].sort() };
}

function collect(node: TrieNode, parts: readonly string[], at: number, out: TrieNode[]): void {
  if (at === parts.length) {
    if (node.routes.size > 0) out.push(node);
    return;
  }
  const part = parts[at] ?? "";
  const literal = node.literals.get(part);
  if (literal !== undefined) collect(literal, parts, at + 1, out);
  if (node.variable !== undefined && part !== "") collect(node.variable, parts, at + 1, out);
}

function paramsOf(route: RestRoute, parts: readonly string[]): PathParam[] {
  const params: PathParam[] = [];
  route.segments.forEach((segment, i) => {
    if (segment.kind !== "variable") return;
    const field = route.pathFields.get(segment.field);
    if (field !== undefined) params.push({ field, raw: parts[i] ?? "" });
  });
  return params;
}
