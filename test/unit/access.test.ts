/**
 * The access rule without a server: the start-up check and the interceptor's refusal of an RPC that
 * declares no `(gw.api.v1.access)`, on a service built in code so that one can lack it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, createFileRegistry, setExtension, type DescMethodUnary, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, MethodOptionsSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { Access, access } from "../../gen/gw/api/v1/access_pb.js";
import { assertAccessDeclared } from "../../src/services/access.js";
import { authInterceptor } from "../../src/services/auth-interceptor.js";

/** A service with one method declaring PUBLIC and one declaring nothing. */
function halfDeclaredService(): DescService {
  const declared = create(MethodOptionsSchema);
  setExtension(declared, access, Access.PUBLIC);
  const proto = create(FileDescriptorProtoSchema, {
    name: "test/v1/half.proto",
    package: "test.v1",
    syntax: "proto3",
    messageType: [{ name: "Empty" }],
    service: [
      {
        name: "HalfService",
        method: [
          { name: "Declared", inputType: ".test.v1.Empty", outputType: ".test.v1.Empty", options: declared },
          { name: "Undeclared", inputType: ".test.v1.Empty", outputType: ".test.v1.Empty" },
        ],
      },
    ],
  });
  const service = createFileRegistry(proto, () => undefined).getService("test.v1.HalfService");
  assert.ok(service);
  return service;
}

const noAdminAuth = { enabled: true, authenticate: () => Promise.resolve(null) };

/** Calls `name` of `service` in memory, through the auth interceptor with admin auth on and no session. */
async function call(service: DescService, name: string): Promise<void> {
  const method = service.methods.find((m): m is DescMethodUnary => m.name === name && m.methodKind === "unary");
  assert.ok(method);
  const transport = createRouterTransport((router) => router.rpc(method, () => ({})), {
    router: { interceptors: [authInterceptor(noAdminAuth)] },
  });
  await transport.unary(method, undefined, undefined, undefined, {});
}

describe("access declarations", () => {
  test("the start-up check names each method that declares no access, and only those", () => {
    const service = halfDeclaredService();
    assert.throws(
      () => assertAccessDeclared(service.methods),
      (err: unknown) => err instanceof Error && /test\.v1\.HalfService\/Undeclared/.test(err.message) && !/Declared,|\/Declared\b/.test(err.message),
    );
  });

  test("the interceptor refuses a method that declares no access with permission_denied naming it", async () => {
    await assert.rejects(call(halfDeclaredService(), "Undeclared"), (err: unknown) => {
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.PermissionDenied);
      assert.match(err.rawMessage, /test\.v1\.HalfService\/Undeclared/);
      return true;
    });
  });

  test("the interceptor lets a declared PUBLIC method through without a session", async () => {
    await call(halfDeclaredService(), "Declared");
  });
});
