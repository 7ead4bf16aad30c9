/**
 * The OpenAPI 3.1 document of the REST bridge, generated from the same route table the bridge serves,
 * so the two cannot disagree. The app computes it once at start-up and serves it at /openapi.json.
 */
import { ScalarType, type DescEnum, type DescField, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { enumValueRestName } from "../../proto-json/enum-names.js";
import { protoComment, type Commentable } from "./proto-comments.js";
import { compileRoutes, type RestRoute, type RouteTable } from "./route-table.js";
import { isWellKnownMessage } from "../../proto-json/well-known.js";

type Schema = Record<string, unknown>;

const ERROR_SCHEMA = "Error";

/** Builds the document; throws like compileRoutes for a rule the bridge cannot serve. */
export function buildOpenApi(
  services: readonly DescService[],
  info: { title: string; version: string },
  table: RouteTable = compileRoutes(services),
): object {
  const schemas: Record<string, Schema> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  const components = new SchemaBuilder(schemas);
  for (const route of table.routes) {
    const item = (paths[route.template] ??= {});
    item[route.httpMethod.toLowerCase()] = operation(route, components);
  }
  schemas[ERROR_SCHEMA] = errorSchema();
  return { openapi: "3.1.0", info: { title: info.title, version: info.version }, paths, components: { schemas } };
}

function operation(route: RestRoute, components: SchemaBuilder): Schema {
  const { method } = route;
  const comment = protoComment(method);
  const op: Schema = {
    operationId: `${route.service.name}.${method.name}`,
    tags: [route.service.name],
    ...(comment === undefined ? {} : { summary: comment.split("\n")[0], description: comment }),
  };
  const parameters: Schema[] = [];
  for (const [name, field] of route.pathFields) {
    parameters.push({ name, in: "path", required: true, schema: components.field(field), ...described(field) });
  }
  for (const [name, field] of route.queryFields) {
    const param: Schema = { name, in: "query", required: false, schema: components.field(field), ...described(field) };
    if (field.fieldKind === "list") Object.assign(param, { style: "form", explode: true });
    parameters.push(param);
  }
  if (parameters.length > 0) op["parameters"] = parameters;
  const body = bodySchema(route, components);
  if (body !== undefined) op["requestBody"] = { required: false, content: { "application/json": { schema: body } } };
  op["responses"] = {
    "200": { description: "OK", content: { "application/json": { schema: components.message(method.output) } } },
    default: {
      description: "Error",
      content: { "application/json": { schema: { $ref: `#/components/schemas/${ERROR_SCHEMA}` } } },
    },
  };
  return op;
}

function bodySchema(route: RestRoute, components: SchemaBuilder): Schema | undefined {
  switch (route.body.kind) {
    case "none":
      return undefined;
    case "field":
      return components.message(route.body.field.message);
    case "all": {
      const input = route.method.input;
      if (route.pathFields.size === 0) return components.message(input);
      // Path-bound fields are refused in the body, so the body schema is the message without them.
      const own = input.fields.filter((f) => !route.pathFields.has(f.name));
      return { type: "object", properties: components.properties(own), additionalProperties: false };
    }
  }
}

/** Collects component schemas on first use, so only reachable types are listed. */
class SchemaBuilder {
  constructor(private readonly schemas: Record<string, Schema>) {}

  /** A schema (usually a $ref) for a message type. */
  message(desc: DescMessage): Schema {
    if (isWellKnownMessage(desc)) return wellKnownSchema(desc);
    if (!(desc.typeName in this.schemas)) {
      // Reserve the name first: messages can refer to themselves.
      this.schemas[desc.typeName] = {};
      this.schemas[desc.typeName] = {
        type: "object",
        ...described(desc),
        properties: this.properties(desc.fields),
        additionalProperties: false,
      };
    }
    return ref(desc.typeName);
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
    for (const field of fields) out[field.name] = { ...this.field(field), ...described(field) };
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

function described(desc: Commentable): { description?: string } {
  const comment = protoComment(desc);
  return comment === undefined ? {} : { description: comment };
}

function ref(name: string): Schema {
  return { $ref: `#/components/schemas/${name}` };
}
