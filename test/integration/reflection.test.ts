import { execFile } from "node:child_process";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { promisify } from "node:util";
import { fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient, createRouterTransport, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb.js";
import {
  ServerReflection,
  type ServerReflectionRequestSchema,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { reflectionRoutes } from "../../src/server/reflection.js";

const run = promisify(execFile);
const BUF = path.resolve(import.meta.dirname, "../../node_modules/.bin/buf");

/** The fake's answer to GetConfig, distinctive enough to recognise in buf curl's output. */
const CONFIG = { client: { prometheusLabels: ["team"], initialPoolSize: 7 } };

function routes(router: ConnectRouter): void {
  router.service(SettingsService, { getConfig: () => ({ config: CONFIG }) });
  reflectionRoutes([SettingsService])(router);
}

/** Runs one reflection stream in memory: sends all requests, collects all responses. */
async function reflect(
  requests: MessageInitShape<typeof ServerReflectionRequestSchema>[],
): Promise<ServerReflectionResponse[]> {
  const client = createClient(ServerReflection, createRouterTransport(routes));
  async function* input() {
    yield* requests;
  }
  const responses: ServerReflectionResponse[] = [];
  for await (const response of client.serverReflectionInfo(input())) responses.push(response);
  return responses;
}

/** The file names in a file_descriptor_response, in the order sent. */
function fileNames(response: ServerReflectionResponse | undefined): string[] {
  assert.equal(response?.messageResponse.case, "fileDescriptorResponse");
  return response.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name);
}

describe("gRPC server reflection through buf curl", () => {
  let server: http2.Http2Server;
  const sessions = new Set<http2.Http2Session>();
  let base = "";

  before(async () => {
    server = http2.createServer(connectNodeAdapter({ routes }));
    server.on("session", (s) => {
      sessions.add(s);
      s.once("close", () => sessions.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    for (const s of sessions) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const curl = async (...args: string[]) =>
    (await run(BUF, ["curl", "--http2-prior-knowledge", "--protocol", "grpc", ...args], { timeout: 30_000 })).stdout;

  test("lists the registered service and both reflection services", async () => {
    const services = (await curl("--list-services", base)).trim().split("\n").sort();
    assert.deepEqual(services, [
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "gw.admin.v1.SettingsService",
    ]);
  });

  test("lists the methods of the registered service", async () => {
    const methods = (await curl("--list-methods", base)).trim().split("\n");
    for (const m of ["GetToolManagerConfig", "UpdateToolManagerConfig", "GetConfig", "UpdateConfig"]) {
      assert.ok(methods.includes(`gw.admin.v1.SettingsService/${m}`), `missing ${m} in ${methods.join(", ")}`);
    }
  });

  for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
    test(`calls a method whose schema came from ${protocol} reflection`, async () => {
      const out = await curl("--reflect-protocol", protocol, "-d", "{}", `${base}/gw.admin.v1.SettingsService/GetConfig`);
      assert.deepEqual(JSON.parse(out), { config: CONFIG });
    });
  }
});

describe("gRPC server reflection handler", () => {
  test("answers an unknown symbol with NOT_FOUND", async () => {
    const [response] = await reflect([{ messageRequest: { case: "fileContainingSymbol", value: "gw.admin.v1.Nope" } }]);
    assert.equal(response?.messageResponse.case, "errorResponse");
    assert.equal(response.messageResponse.value.errorCode, 5);
    assert.match(response.messageResponse.value.errorMessage, /gw\.admin\.v1\.Nope/);
  });

  test("answers an unknown file name with NOT_FOUND", async () => {
    const [response] = await reflect([{ messageRequest: { case: "fileByFilename", value: "nope.proto" } }]);
    assert.equal(response?.messageResponse.case, "errorResponse");
    assert.equal(response.messageResponse.value.errorCode, 5);
  });

  test("sends a file with its transitive imports, the requested file first", async () => {
    const [response] = await reflect([{ messageRequest: { case: "fileByFilename", value: "gw/admin/v1/settings.proto" } }]);
    const names = fileNames(response);
    assert.equal(names[0], "gw/admin/v1/settings.proto");
    assert.deepEqual([...names].sort(), [
      "google/api/annotations.proto",
      "google/api/http.proto",
      "google/protobuf/descriptor.proto",
      "google/protobuf/field_mask.proto",
      "gw/admin/v1/settings.proto",
      "gw/api/v1/access.proto",
    ]);
  });

  test("finds the file declaring a method or a message field", async () => {
    const symbols = ["gw.admin.v1.SettingsService.GetConfig", "gw.admin.v1.ClientSettings.initial_pool_size"];
    const responses = await reflect(symbols.map((value) => ({ messageRequest: { case: "fileContainingSymbol", value } })));
    assert.deepEqual(responses.map((r) => fileNames(r)[0]), ["gw/admin/v1/settings.proto", "gw/admin/v1/settings.proto"]);
  });

  test("finds the file declaring a nested enum value", async () => {
    const [response] = await reflect([
      { messageRequest: { case: "fileContainingSymbol", value: "google.protobuf.FieldDescriptorProto.TYPE_STRING" } },
    ]);
    assert.equal(fileNames(response)[0], "google/protobuf/descriptor.proto");
  });

  test("does not resend files already sent on the same stream", async () => {
    const [first, second] = await reflect([
      { messageRequest: { case: "fileContainingSymbol", value: "gw.admin.v1.SettingsService" } },
      { messageRequest: { case: "fileContainingSymbol", value: "gw.admin.v1.GetConfigRequest" } },
    ]);
    assert.equal(fileNames(first).length, 6);
    assert.deepEqual(fileNames(second), ["gw/admin/v1/settings.proto"]);
  });

  test("reports the extensions of MethodOptions the served files declare (access, google.api.http)", async () => {
    const [numbers, file] = await reflect([
      { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 72295728 },
        },
      },
    ]);
    assert.equal(numbers?.messageResponse.case, "allExtensionNumbersResponse");
    assert.deepEqual(numbers.messageResponse.value.extensionNumber, [50100, 72295728]);
    assert.equal(fileNames(file)[0], "google/api/annotations.proto");
  });

  test("answers extension numbers of an unknown type with NOT_FOUND", async () => {
    const [response] = await reflect([{ messageRequest: { case: "allExtensionNumbersOfType", value: "gw.Nope" } }]);
    assert.equal(response?.messageResponse.case, "errorResponse");
    assert.equal(response.messageResponse.value.errorCode, 5);
  });
});
