/**
 * Small descriptors built in code for the REST bridge tests: a ThingService whose messages use every
 * field shape the bridge maps (enums in lists and maps, 64-bit integers, oneofs, well-known types),
 * and a builder for one-method services with any http rule, for the route compiler's refusals.
 */
import {
  create,
  createFileRegistry,
  setExtension,
  type DescFile,
  type DescService,
  type MessageInitShape,
} from "@bufbuild/protobuf";
import {
  DescriptorProtoSchema,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
  file_google_protobuf_duration,
  file_google_protobuf_field_mask,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  type FieldDescriptorProtoSchema,
  type MethodDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";
import { file_google_api_annotations, http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";

type FieldInit = MessageInitShape<typeof FieldDescriptorProtoSchema>;
type MessageInit = MessageInitShape<typeof DescriptorProtoSchema>;
type RuleInit = MessageInitShape<typeof HttpRuleSchema>;
type Verb = "get" | "put" | "post" | "delete" | "patch";

/** An http rule: `rule("get", "/things/{id}")`, with optional body and other HttpRule fields. */
export function rule(verb: Verb, path: string, body = "", extra: Omit<RuleInit, "pattern" | "body"> = {}): RuleInit {
  return { pattern: { case: verb, value: path }, body, ...extra } as RuleInit;
}

const DEPS: Record<string, DescFile> = {
  "google/api/annotations.proto": file_google_api_annotations,
  "google/protobuf/timestamp.proto": file_google_protobuf_timestamp,
  "google/protobuf/struct.proto": file_google_protobuf_struct,
  "google/protobuf/field_mask.proto": file_google_protobuf_field_mask,
  "google/protobuf/wrappers.proto": file_google_protobuf_wrappers,
  "google/protobuf/duration.proto": file_google_protobuf_duration,
};

function field(name: string, number: number, type: Type, extra: Partial<FieldInit> = {}): FieldInit {
  return { name, number, type, label: Label.OPTIONAL, jsonName: camel(name), ...extra } as FieldInit;
}

function repeated(name: string, number: number, type: Type, extra: Partial<FieldInit> = {}): FieldInit {
  return field(name, number, type, { label: Label.REPEATED, ...extra });
}

function message(name: string, typeName: string, number: number, extra: Partial<FieldInit> = {}): FieldInit {
  return field(name, number, Type.MESSAGE, { typeName, ...extra });
}

function mapEntry(entryName: string, key: Type, value: Type, valueTypeName?: string): MessageInit {
  return {
    name: entryName,
    field: [field("key", 1, key), field("value", 2, value, valueTypeName === undefined ? {} : { typeName: valueTypeName })],
    options: { mapEntry: true },
  };
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function rpc(name: string, input: string, output: string, rule: RuleInit | undefined, streaming = false) {
  const options = create(MethodOptionsSchema);
  if (rule !== undefined) setExtension(options, http, create(HttpRuleSchema, rule));
  const method: MessageInitShape<typeof MethodDescriptorProtoSchema> = {
    name,
    inputType: `.test.v1.${input}`,
    outputType: `.test.v1.${output}`,
    options,
    serverStreaming: streaming,
  };
  return method;
}

const MESSAGES: MessageInit[] = [
  {
    name: "Inner",
    field: [field("color", 1, Type.ENUM, { typeName: ".test.v1.Color" }), field("big", 2, Type.INT64), field("note", 3, Type.STRING)],
  },
  {
    name: "Thing",
    field: [
      field("id", 1, Type.STRING),
      field("small", 2, Type.INT32),
      field("big", 3, Type.INT64),
      field("ubig", 4, Type.UINT64),
      repeated("colors", 5, Type.ENUM, { typeName: ".test.v1.Color" }),
      repeated("color_by_name", 6, Type.MESSAGE, { typeName: ".test.v1.Thing.ColorByNameEntry" }),
      repeated("inners", 7, Type.MESSAGE, { typeName: ".test.v1.Thing.InnersEntry" }),
      message("inner", ".test.v1.Inner", 8),
      message("at", ".google.protobuf.Timestamp", 9),
      message("meta", ".google.protobuf.Struct", 10),
      field("a", 11, Type.STRING, { oneofIndex: 0 }),
      field("b", 12, Type.STRING, { oneofIndex: 0 }),
      field("blob", 13, Type.BYTES),
      field("ratio", 14, Type.DOUBLE),
      field("flag", 15, Type.BOOL),
      repeated("bigs", 16, Type.INT64),
      repeated("by_number", 17, Type.MESSAGE, { typeName: ".test.v1.Thing.ByNumberEntry" }),
      message("anything", ".google.protobuf.Value", 18),
      field("f", 19, Type.FLOAT),
      field("u", 20, Type.UINT32),
      message("wrapped", ".google.protobuf.Int32Value", 21),
      message("took", ".google.protobuf.Duration", 22),
      repeated("inner_list", 23, Type.MESSAGE, { typeName: ".test.v1.Inner" }),
    ],
    nestedType: [
      mapEntry("ColorByNameEntry", Type.STRING, Type.ENUM, ".test.v1.Color"),
      mapEntry("InnersEntry", Type.STRING, Type.MESSAGE, ".test.v1.Inner"),
      mapEntry("ByNumberEntry", Type.INT32, Type.STRING),
    ],
    oneofDecl: [{ name: "choice" }],
  },
  {
    name: "GetThingRequest",
    field: [
      field("id", 1, Type.STRING),
      field("color", 2, Type.ENUM, { typeName: ".test.v1.Color" }),
      repeated("tags", 3, Type.STRING),
      field("since", 4, Type.INT64),
      field("verbose", 5, Type.BOOL),
      message("inner", ".test.v1.Inner", 6),
    ],
  },
  {
    name: "UpdateThingRequest",
    field: [
      field("id", 1, Type.STRING),
      message("thing", ".test.v1.Thing", 2),
      message("update_mask", ".google.protobuf.FieldMask", 3),
    ],
  },
  { name: "Empty" },
];

const COLOR = {
  name: "Color",
  value: [
    { name: "COLOR_UNSPECIFIED", number: 0 },
    { name: "COLOR_RED", number: 1 },
    { name: "COLOR_DARK_BLUE", number: 2 },
  ],
};

/** Comments for the OpenAPI test: ThingService, GetThing, Thing, Thing.id, Color (descriptor.proto paths). */
const COMMENTS = [
  { path: [6, 0], leadingComments: " ThingService keeps things.\n" },
  { path: [6, 0, 2, 0], leadingComments: " GetThing reads one thing.\n More detail here.\n" },
  { path: [4, 1], leadingComments: " Thing is a thing.\n" },
  { path: [4, 1, 2, 0], leadingComments: " id identifies the thing.\n" },
  { path: [5, 0], leadingComments: " Color is a color.\n" },
];

function buildFile(methods: ReturnType<typeof rpc>[], withComments: boolean): DescService {
  const proto = create(FileDescriptorProtoSchema, {
    name: "test/v1/thing.proto",
    package: "test.v1",
    syntax: "proto3",
    dependency: Object.keys(DEPS),
    messageType: MESSAGES,
    enumType: [COLOR],
    service: [{ name: "ThingService", method: methods }],
    ...(withComments ? { sourceCodeInfo: { location: COMMENTS } } : {}),
  });
  const registry = createFileRegistry(proto, (name) => DEPS[name]);
  const service = registry.getService("test.v1.ThingService");
  if (service === undefined) throw new Error("test descriptor did not build");
  return service;
}

/** ThingService: GetThing, ListThings, SpecialThing, UpdateThing (body "thing" + update_mask), CreateThing (body "*"), Ping (no rule). */
export function thingService(options: { withComments?: boolean } = {}): DescService {
  return buildFile(
    [
      rpc("GetThing", "GetThingRequest", "Thing", rule("get", "/things/{id}")),
      rpc("ListThings", "GetThingRequest", "Thing", rule("get", "/things")),
      rpc("SpecialThing", "GetThingRequest", "Thing", rule("get", "/things/special")),
      rpc("UpdateThing", "UpdateThingRequest", "Thing", rule("patch", "/things/{id}", "thing")),
      rpc("CreateThing", "Thing", "Thing", rule("post", "/things/{id}/create", "*")),
      rpc("Ping", "Empty", "Empty", undefined),
    ],
    options.withComments ?? false,
  );
}

/** A ThingService with one method, `Only(GetThingRequest) returns (Thing)`, bound by `rule`. */
export function serviceWithRule(rule: RuleInit, options: { input?: string; streaming?: boolean } = {}): DescService {
  return buildFile([rpc("Only", options.input ?? "GetThingRequest", "Thing", rule, options.streaming)], false);
}

/** A ThingService with two methods bound by the two rules. */
export function serviceWithRules(first: RuleInit, second: RuleInit): DescService {
  return buildFile([rpc("First", "GetThingRequest", "Thing", first), rpc("Second", "GetThingRequest", "Thing", second)], false);
}
