/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha) served from the generated descriptors, so
 * `buf curl` and grpcurl can call the gateway without proto files.
 */
import { create, toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** gRPC status codes used in error_response (the reflection protocol carries them as plain ints). */
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_NOT_FOUND = 5;

/**
 * The request fields both protocol versions share. v1 and v1alpha messages are identical in shape, so
 * one implementation serves both; only the final `create()` names the version's schema.
 */
interface ReflectionRequest {
  readonly messageRequest:
    | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** The message_response oneof, as an init shape both versions' schemas accept. */
type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** Everything reflection can answer, computed once at registration. */
class DescriptorIndex {
  readonly serviceNames: readonly string[];
  private readonly files = new Map<string, DescFile>();
  private readonly encoded = new Map<string, Uint8Array>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly messageTypes = new Set<string>();
  /** extendee type name -> extension number -> declaring file */
  private readonly extensions = new Map<string, Map<number, DescFile>>();

  constructor(services: readonly DescService[]) {
    const names = new Set<string>();
    for (const service of services) {
      names.add(service.typeName);
      this.addFile(service.file);
    }
    this.serviceNames = [...names];
  }

  /** The file with this name (e.g. `gw/admin/v1/settings.proto`), if known. */
  fileByName(name: string): DescFile | undefined {
    return this.files.get(name);
  }

  /** The file declaring a fully-qualified symbol: service, method, message, field, enum, enum value, extension. */
  fileBySymbol(symbol: string): DescFile | undefined {
    return this.symbols.get(symbol);
  }

  /** The file declaring extension `number` of message `extendee`. */
  fileByExtension(extendee: string, number: number): DescFile | undefined {
    return this.extensions.get(extendee)?.get(number);
  }

  /** Extension numbers known for `typeName`, or undefined when the type is not a known message. */
  extensionNumbers(typeName: string): number[] | undefined {
    if (!this.messageTypes.has(typeName)) return undefined;
    return [...(this.extensions.get(typeName)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /**
   * `file` first, then its transitive imports breadth-first, skipping files this stream already got.
   * The requested file is always included so that every answer is self-describing.
   */
  fileWithDependencies(file: DescFile, sent: Set<string>): Uint8Array[] {
    const out: Uint8Array[] = [];
    const seen = new Set<string>();
    const queue: DescFile[] = [file];
    for (let i = 0; i < queue.length; i++) {
      const current = queue[i] as DescFile;
      const name = fileName(current);
      if (seen.has(name)) continue;
      seen.add(name);
      if (out.length === 0 || !sent.has(name)) {
        sent.add(name);
        out.push(this.encode(current));
      }
      queue.push(...current.dependencies);
    }
    return out;
  }

  private encode(file: DescFile): Uint8Array {
    const name = fileName(file);
    let bytes = this.encoded.get(name);
    if (bytes === undefined) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.encoded.set(name, bytes);
    }
    return bytes;
  }

  private addFile(file: DescFile): void {
    const name = fileName(file);
    if (this.files.has(name)) return;
    this.files.set(name, file);
    for (const dep of file.dependencies) this.addFile(dep);
    for (const service of file.services) {
      this.addSymbol(service.typeName, file);
      for (const method of service.methods) this.addSymbol(`${service.typeName}.${method.name}`, file);
    }
    const pkg = file.proto.package;
    for (const message of file.messages) this.addMessage(message, file);
    for (const en of file.enums) this.addEnum(en, pkg, file);
    for (const ext of file.extensions) this.addExtension(ext, file);
  }

  private addMessage(message: DescFile["messages"][number], file: DescFile): void {
    this.addSymbol(message.typeName, file);
    this.messageTypes.add(message.typeName);
    for (const field of message.fields) this.addSymbol(`${message.typeName}.${field.name}`, file);
    for (const oneof of message.oneofs) this.addSymbol(`${message.typeName}.${oneof.name}`, file);
    for (const nested of message.nestedMessages) this.addMessage(nested, file);
    for (const en of message.nestedEnums) this.addEnum(en, message.typeName, file);
    for (const ext of message.nestedExtensions) this.addExtension(ext, file);
  }

  /** Enum values are scoped as siblings of their enum (C++ scoping), hence `scope` and not the enum's name. */
  private addEnum(en: DescFile["enums"][number], scope: string, file: DescFile): void {
    this.addSymbol(en.typeName, file);
    for (const value of en.values) this.addSymbol(scope === "" ? value.name : `${scope}.${value.name}`, file);
  }

  private addExtension(ext: DescFile["extensions"][number], file: DescFile): void {
    this.addSymbol(ext.typeName, file);
    let byNumber = this.extensions.get(ext.extendee.typeName);
    if (byNumber === undefined) {
      byNumber = new Map();
      this.extensions.set(ext.extendee.typeName, byNumber);
    }
    byNumber.set(ext.number, file);
  }

  private addSymbol(symbol: string, file: DescFile): void {
    // Symbols are unique across a valid descriptor set; keep the first in case of a duplicate registration.
    if (!this.symbols.has(symbol)) this.symbols.set(symbol, file);
  }
}

/** DescFile.name drops the `.proto` suffix; reflection speaks in full file names. */
function fileName(file: DescFile): string {
  return file.proto.name;
}

function notFound(message: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: GRPC_NOT_FOUND, errorMessage: message } };
}

/** Answers one request; `sent` holds the file names already sent on this stream. */
function answer(index: DescriptorIndex, request: ReflectionRequest, sent: Set<string>): ReflectionAnswer {
  const files = (file: DescFile): ReflectionAnswer => ({
    case: "fileDescriptorResponse",
    value: { fileDescriptorProto: index.fileWithDependencies(file, sent) },
  });
  const req = request.messageRequest;
  switch (req.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: index.serviceNames.map((name) => ({ name })) } };
    case "fileByFilename": {
      const file = index.fileByName(req.value);
      return file ? files(file) : notFound(`file "${req.value}" is not served by this server`);
    }
    case "fileContainingSymbol": {
      const file = index.fileBySymbol(req.value);
      return file ? files(file) : notFound(`symbol "${req.value}" is not served by this server`);
    }
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = req.value;
      const file = index.fileByExtension(containingType, extensionNumber);
      return file
        ? files(file)
        : notFound(`no extension ${extensionNumber} of "${containingType}" is known to this server`);
    }
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbers(req.value);
      return numbers
        ? { case: "allExtensionNumbersResponse", value: { baseTypeName: req.value, extensionNumber: numbers } }
        : notFound(`message type "${req.value}" is not served by this server`);
    }
    default:
      return {
        case: "errorResponse",
        value: { errorCode: GRPC_INVALID_ARGUMENT, errorMessage: "reflection request sets no message_request field" },
      };
  }
}

/** Answers each request of one stream in order, remembering which files the stream has already received. */
async function* serve<Req extends ReflectionRequest, Res>(
  index: DescriptorIndex,
  requests: AsyncIterable<Req>,
  respond: (request: Req, answer: ReflectionAnswer) => Res,
): AsyncIterable<Res> {
  const sent = new Set<string>();
  for await (const request of requests) yield respond(request, answer(index, request, sent));
}

/** The two reflection services reflectionRoutes adds to a router. */
export const REFLECTION_SERVICES: readonly DescService[] = [v1.ServerReflection, v1alpha.ServerReflection];

/**
 * Registers grpc.reflection.v1 and v1alpha ServerReflection on a router, describing `services` (plus the
 * two reflection services themselves) and every file they depend on. The index is built once, however many
 * routers (the served one, the in-process transport's) are given the registration.
 */
export function reflectionRoutes(services: readonly DescService[]): (router: ConnectRouter) => void {
  const index = new DescriptorIndex([...services, ...REFLECTION_SERVICES]);
  // Reflection describes the API rather than being part of it: its vendored protos declare no
  // (gw.api.v1.access), which the API's interceptors refuse, and what it serves is public anyway.
  const outsideTheApi = { interceptors: [] };
  const v1Impl = {
    serverReflectionInfo: (requests: AsyncIterable<v1.ServerReflectionRequest>) =>
      serve(index, requests, (request, messageResponse) =>
        create(v1.ServerReflectionResponseSchema, { validHost: request.host, originalRequest: request, messageResponse }),
      ),
  };
  const v1alphaImpl = {
    serverReflectionInfo: (requests: AsyncIterable<v1alpha.ServerReflectionRequest>) =>
      serve(index, requests, (request, messageResponse) =>
        create(v1alpha.ServerReflectionResponseSchema, { validHost: request.host, originalRequest: request, messageResponse }),
      ),
  };
  return (router) => {
    router.service(v1.ServerReflection, v1Impl, outsideTheApi);
    router.service(v1alpha.ServerReflection, v1alphaImpl, outsideTheApi);
  };
}
