/**
 * Leading comments of proto elements, read from the descriptor's source code info. Generated code
 * usually ships without it (then every lookup is undefined); descriptors from `buf build` keep it.
 */
import type {
  DescEnum,
  DescEnumValue,
  DescField,
  DescFile,
  DescMessage,
  DescMethod,
  DescService,
} from "@bufbuild/protobuf";

/** An element that can carry a comment. */
export type Commentable = DescMessage | DescField | DescEnum | DescEnumValue | DescService | DescMethod;

const byFile = new WeakMap<DescFile, ReadonlyMap<string, string>>();

/** The element's leading comment, trimmed, or undefined when the descriptor has none. */
export function protoComment(desc: Commentable): string | undefined {
  const file = fileOf(desc);
  let comments = byFile.get(file);
  if (comments === undefined) {
    comments = indexComments(file);
    byFile.set(file, comments);
  }
  if (comments.size === 0) return undefined;
  const path = pathOf(desc);
  return path === undefined ? undefined : comments.get(path.join(","));
}

function indexComments(file: DescFile): ReadonlyMap<string, string> {
  const index = new Map<string, string>();
  for (const location of file.proto.sourceCodeInfo?.location ?? []) {
    const text = clean(location.leadingComments ?? "");
    if (text !== "") index.set(location.path.join(","), text);
  }
  return index;
}

function clean(comment: string): string {
  return comment
    .split("\n")
    .map((line) => (line.startsWith(" ") ? line.slice(1) : line).trimEnd())
    .join("\n")
    .trim();
}

function fileOf(desc: Commentable): DescFile {
  switch (desc.kind) {
    case "field":
    case "rpc":
    case "enum_value":
      return desc.parent.file;
    default:
      return desc.file;
  }
}

// Paths follow descriptor.proto field numbers: FileDescriptorProto.message_type = 4, enum_type = 5,
// service = 6; DescriptorProto.field = 2, nested_type = 3, enum_type = 4; EnumDescriptorProto.value = 2;
// ServiceDescriptorProto.method = 2.
function pathOf(desc: Commentable): number[] | undefined {
  switch (desc.kind) {
    case "message":
      return desc.parent === undefined
        ? at([4], desc.file.proto.messageType.indexOf(desc.proto))
        : join(pathOf(desc.parent), 3, desc.parent.proto.nestedType.indexOf(desc.proto));
    case "enum":
      return desc.parent === undefined
        ? at([5], desc.file.proto.enumType.indexOf(desc.proto))
        : join(pathOf(desc.parent), 4, desc.parent.proto.enumType.indexOf(desc.proto));
    case "field":
      return join(pathOf(desc.parent), 2, desc.parent.proto.field.indexOf(desc.proto));
    case "enum_value":
      return join(pathOf(desc.parent), 2, desc.parent.proto.value.indexOf(desc.proto));
    case "service":
      return at([6], desc.file.proto.service.indexOf(desc.proto));
    case "rpc":
      return join(pathOf(desc.parent), 2, desc.parent.proto.method.indexOf(desc.proto));
  }
}

function at(prefix: number[], index: number): number[] | undefined {
  return index < 0 ? undefined : [...prefix, index];
}

function join(prefix: number[] | undefined, tag: number, index: number): number[] | undefined {
  return prefix === undefined || index < 0 ? undefined : [...prefix, tag, index];
}
