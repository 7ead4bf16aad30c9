/**
 * The OpenAPI 3.1 paths of the REST bridge, generated from the same route table the bridge serves,
 * so the two cannot disagree. Field behaviours become `required`, `readOnly` and `writeOnly`; who may
 * call an operation and which errors its service adds come from the caller, since the annotations do
 * not say.
 */
import { ScalarType, type DescEnum, type DescField, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { enumValueRestName } from "../../proto-json/enum-names.js";
import { isImmutable, isInputOnly, isOutputOnly, isRequired } from "../../proto-json/field-mask.js";
import { protoComment, type Commentable } from "./proto-comments.js";
import { compileRoutes, type RestRoute, type RouteTable } from "./route-table.js";
import { presenceListValues } from "../../proto-json/presence-list.js";
import { isWellKnownMessage } from "../../proto-json/well-known.js";

/** A JSON Schema or any other OpenAPI object, as plain JSON. */
export type Schema = Record<string, unknown>;

/** One security requirement: scheme name -> scopes (always none here). */
export type SecurityRequirement = Readonly<Record<string, readonly string[]>>;

/** The document this module builds; callers may add paths and components before serving it. */
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: Schema & { title: string; version: string };
  paths: Record<string, Record<string, Schema>>;
  components: { schemas: Record<string, Schema> } & Schema;
  [key: string]: unknown;
}

/** What the annotations do not say about an operation: who may call it and the errors its service adds. */
export interface OperationFacts {
  /** Alternative security requirements; [] when the operation needs no credential. */
  readonly security?: readonly SecurityRequirement[];
  /** 4xx statuses beyond the bridge's own (400, and 413 and 415 for a body), each with its cause. */
  readonly errors?: Readonly<Record<number, string>>;
}

/** The name of the /api error envelope among the component schemas. */
export const ERROR_SCHEMA = "Error";

/** Builds the document; throws like compileRoutes for a rule the bridge cannot serve. */
export function buildOpenApi(
  services: readonly DescService[],
  info: { title: string; version: string },
  table: RouteTable = compileRoutes(services),
  facts: (route: RestRoute) => OperationFacts = () => ({}),
): OpenApiDocument {
  const schemas: Record<string, Schema> = {};
  const paths: Record<string, Record<string, Schema>> = {};
  const components = new SchemaBuilder(schemas);
  for (const route of table.routes) {
    const item = (paths[route.template] ??= {});
    item[route.httpMethod.toLowerCase()] = operation(route, components, facts(route));
  }
  schemas[ERROR_SCHEMA] = errorSchema();
  return { openapi: "3.1.0", info: { title: info.title, version: info.version }, paths, components: { schemas } };
}

function operation(route: RestRoute, components: SchemaBuilder, facts: OperationFacts): Schema {
  const { method } = route;
  const comment = protoComment(method);
  const op: Schema = {
    operationId: `${route.service.name}.${method.name}`,
    tags: [route.service.name],
    // Generated descriptors carry no comments, so the method name is the summary of last resort.
    summary: comment === undefined ? sentenceOf(method.name) : comment.split("\n")[0],
    ...(comment === undefined ? {} : { description: comment }),
  };
  const parameters: Schema[] = [];
  for (const [name, field] of route.pathFields) {
    parameters.push({ name, in: "path", required: true, schema: components.field(field), ...described(field) });
  }
  for (const [name, field] of route.queryFields) {
    const param: Schema = { name, in: "query", required: isRequired(field), schema: components.field(field), ...described(field) };
    if (field.fieldKind === "list") Object.assign(param, { style: "form", explode: true });
    parameters.push(param);
  }
  if (parameters.length > 0) op["parameters"] = parameters;
  const body = bodySchema(route, components);
  if (body !== undefined) op["requestBody"] = { required: false, content: { "application/json": { schema: body } } };
  if (facts.security !== undefined) op["security"] = facts.security;
  const responses: Schema = {
    "200": { description: "OK", content: { "application/json": { schema: components.message(method.output) } } },
  };
  // Integer keys iterate in ascending order, so the statuses come out sorted.
  for (const [status, cause] of Object.entries(errorsOf(route, facts))) responses[status] = errorResponse(cause);
  responses["default"] = errorResponse("Any other error, in the same envelope.");
  op["responses"] = responses;
  return op;
}

/** The 4xx statuses of an operation: the bridge's own, then the service's. */
function errorsOf(route: RestRoute, facts: OperationFacts): Record<number, string> {
  const errors: Record<number, string> = {
    400: "Invalid request: a field or parameter is unknown, of the wrong type, or breaks a rule; the message names it.",
  };
  if (route.body.kind !== "none") {
    errors[413] = "The body is larger than client.max_request_body_bytes.";
    errors[415] = "The body is not UTF-8 JSON (content-type application/json).";
  }
  return { ...errors, ...facts.errors };
}

/** An error response whose JSON body is the `envelope` component schema (the /api one by default). */
export function errorResponse(description: string, envelope = ERROR_SCHEMA): Schema {
  return { description, content: { "application/json": { schema: ref(envelope) } } };
}

/** "CreateMcpClient" -> "Create mcp client". */
function sentenceOf(name: string): string {
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function bodySchema(route: RestRoute, components: SchemaBuilder): Schema | undefined {
  switch (route.body.kind) {
    case "none":
      return undefined;
    case "field": {
      const message = route.body.field.message;
      if (route.updateMaskField === undefined) return components.message(message);
      // The update mask is the body's keys, so an update sends only what it changes: nothing is required.
      const note =
        route.httpMethod === "PATCH"
          ? "Only the fields present change, inside nested objects too."
          : "Only the fields present change; a nested object present replaces the stored one whole.";
      return components.inline(message, message.fields, note);
    }
    case "all": {
      const input = route.method.input;
      if (route.pathFields.size === 0) return components.message(input);
      // Path-bound fields are refused in the body, so the body schema is the message without them.
      const own = input.fields.filter((f) => !route.pathFields.has(f.name));
      return { ...components.inline(input, own), ...requiredOf(own) };
    }
  }
}

/** Collects component schemas on first use, so only reachable types are listed. */
class SchemaBuilder {
  constructor(private readonly schemas: Record<string, Schema>) {}

  /** A schema (usually a $ref) for a message type. */
  message(desc: DescMessage): Schema {
    if (isWellKnownMessage(desc)) return wellKnownSchema(desc);
    const values = presenceListValues(desc);
    if (values !== undefined) return { type: "array", items: this.element(values.listKind, values.scalar, values.enum, values.message) };
    if (!(desc.typeName in this.schemas)) {
      // Reserve the name first: messages can refer to themselves.
      this.schemas[desc.typeName] = {};
      this.schemas[desc.typeName] = { ...this.inline(desc, desc.fields), ...requiredOf(desc.fields) };
    }
    return ref(desc.typeName);
  }

  /** An object schema of some fields of a message, without `required`; `note` is added to its description. */
  inline(desc: DescMessage, fields: readonly DescField[], note?: string): Schema {
    const description = [protoComment(desc), note].filter((t) => t !== undefined).join("\n\n");
    return {
      type: "object",
      ...(description === "" ? {} : { description }),
      properties: this.properties(fields),
      additionalProperties: false,
    };
  }

  /** A schema for an enum type. */
  enumeration(desc: DescEnum): Schema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    if (!(desc.typeName in this.schemas)) {
      const comment = protoComment(desc);
      const zero = desc.values.find((v) => v.number === 0);
      const note =
        zero !== undefined && /(^|_)UNSPECIFIED$/.test(zero.name)
          ? `"${enumValueRestName(zero)}" only appears in responses; it is never accepted on input.`
          : undefined;
      const description = [comment, note].filter((t) => t !== undefined).join("\n\n");
      this.schemas[desc.typeName] = {
        type: "string",
        enum: desc.values.map(enumValueRestName),
        ...(description === "" ? {} : { description }),
      };
    }
    return ref(desc.typeName);
  }

  /** The properties object for fields, keyed by proto field name. */
  properties(fields: readonly DescField[]): Record<string, Schema> {
    const out: Record<string, Schema> = {};
    for (const field of fields) out[field.name] = { ...this.field(field), ...fieldAnnotations(field) };
    return out;
  }

  /** The schema of one field's JSON value. */
  field(field: DescField): Schema {
    switch (field.fieldKind) {
      case "scalar":
        return scalarSchema(field.scalar);
      case "enum":
        return this.enumeration(field.enum);
      case "message":
        return this.message(field.message);
      case "list":
        return { type: "array", items: this.element(field.listKind, field.scalar, field.enum, field.message) };
      case "map":
        return {
          type: "object",
          additionalProperties: this.element(field.mapKind, field.scalar, field.enum, field.message),
        };
    }
  }

  private element(
    kind: "scalar" | "enum" | "message",
    scalar: ScalarType | undefined,
    enumeration: DescEnum | undefined,
    message: DescMessage | undefined,
  ): Schema {
    if (kind === "enum" && enumeration !== undefined) return this.enumeration(enumeration);
    if (kind === "message" && message !== undefined) return this.message(message);
    return scalarSchema(scalar ?? ScalarType.STRING);
  }
}

function scalarSchema(type: ScalarType): Schema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "uint32", minimum: 0 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      // Numbers when exact, decimal strings beyond 2^53 (and accepted as either on input).
      return { type: ["integer", "string"], format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: ["integer", "string"], format: "uint64" };
  }
}

function wellKnownSchema(desc: DescMessage): Schema {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return { type: "string", format: "date-time" };
    case "google.protobuf.Duration":
      return { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$" };
    case "google.protobuf.FieldMask":
      return { type: "string", description: "Comma-separated field paths." };
    case "google.protobuf.Struct":
      return { type: "object", additionalProperties: true };
    case "google.protobuf.Value":
      return {};
    case "google.protobuf.ListValue":
      return { type: "array", items: {} };
    case "google.protobuf.Empty":
      return { type: "object", additionalProperties: false };
    case "google.protobuf.Any":
      return { type: "object", required: ["@type"], properties: { "@type": { type: "string" } }, additionalProperties: true };
    case "google.protobuf.DoubleValue":
      return scalarSchema(ScalarType.DOUBLE);
    case "google.protobuf.FloatValue":
      return scalarSchema(ScalarType.FLOAT);
    case "google.protobuf.Int64Value":
      return scalarSchema(ScalarType.INT64);
    case "google.protobuf.UInt64Value":
      return scalarSchema(ScalarType.UINT64);
    case "google.protobuf.Int32Value":
      return scalarSchema(ScalarType.INT32);
    case "google.protobuf.UInt32Value":
      return scalarSchema(ScalarType.UINT32);
    case "google.protobuf.BoolValue":
      return scalarSchema(ScalarType.BOOL);
    case "google.protobuf.StringValue":
      return scalarSchema(ScalarType.STRING);
    case "google.protobuf.BytesValue":
      return scalarSchema(ScalarType.BYTES);
    default:
      return { type: "object" };
  }
}

function errorSchema(): Schema {
  return {
    type: "object",
    description: "The error envelope of every REST error. Some errors add fields beside `error`.",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["type", "message"],
        properties: {
          type: { type: "string", description: "snake_case error type, e.g. invalid_request or not_found." },
          message: { type: "string", description: "What went wrong and what to do about it." },
        },
      },
    },
    additionalProperties: true,
  };
}

/** `required` for the fields a request must set (REQUIRED); responses always carry them too. */
function requiredOf(fields: readonly DescField[]): { required?: string[] } {
  const required = fields.filter(isRequired).map((f) => f.name);
  return required.length === 0 ? {} : { required };
}

/** A property's description and what its field behaviours say about reading and writing it. */
function fieldAnnotations(field: DescField): Schema {
  const immutable = isImmutable(field)
    ? "Immutable: set at creation; an update may send the stored value back unchanged, a different one is a 400."
    : undefined;
  const description = [protoComment(field), immutable].filter((t) => t !== undefined).join("\n\n");
  return {
    ...(description === "" ? {} : { description }),
    ...(isOutputOnly(field) ? { readOnly: true } : {}),
    ...(isInputOnly(field) ? { writeOnly: true } : {}),
  };
}

function described(desc: Commentable): { description?: string } {
  const comment = protoComment(desc);
  return comment === undefined ? {} : { description: comment };
}

/** A $ref to a component schema. */
export function ref(name: string): Schema {
  return { $ref: `#/components/schemas/${name}` };
}
