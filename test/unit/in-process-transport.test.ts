import assert from "node:assert/strict";
import { test } from "node:test";
import { create, isMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createContextKey, createContextValues, type ConnectRouter, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { ClusterService, ListNodesRequestSchema, ListNodesResponseSchema } from "../../gen/gw/admin/v1/cluster_pb.js";
import * as reflection from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { createInProcessTransport } from "../../src/server/in-process-transport.js";

/** An interceptor that records its name in `seen` on the way in. */
function recording(name: string, seen: string[]): Interceptor {
  return (next) => async (req) => {
    seen.push(name);
    return next(req);
  };
}

function clusterRoutes(listNodes: (req: unknown, ctx: HandlerContext) => unknown, options?: object): (router: ConnectRouter) => void {
  return (router) => router.service(ClusterService, { listNodes: listNodes as never }, options as never);
}

test("runs the router's interceptors around the implementation, the first outermost", async () => {
  const seen: string[] = [];
  const transport = createInProcessTransport(
    clusterRoutes(() => {
      seen.push("implementation");
      return {};
    }),
    [recording("first", seen), recording("second", seen)],
  );
  await createClient(ClusterService, transport).listNodes({});
  assert.deepEqual(seen, ["first", "second", "implementation"]);
});

test("a service registered with interceptors of its own runs those instead of the router's", async () => {
  const seen: string[] = [];
  const transport = createInProcessTransport(
    clusterRoutes(() => ({}), { interceptors: [recording("own", seen)] }),
    [recording("router", seen)],
  );
  await createClient(ClusterService, transport).listNodes({});
  assert.deepEqual(seen, ["own"]);
});

test("the implementation sees the headers, context values and signal the interceptors passed on", async () => {
  const key = createContextKey("none", { description: "test key" });
  let got: { header: string | null; value: string; signalAborted: boolean } | undefined;
  const addHeader: Interceptor = (next) => (req) => {
    req.header.set("x-added", "by interceptor");
    return next(req);
  };
  const transport = createInProcessTransport(
    clusterRoutes((_req, ctx) => {
      got = { header: ctx.requestHeader.get("x-added"), value: ctx.values.get(key), signalAborted: ctx.signal.aborted };
      return {};
    }),
    [addHeader],
  );
  await createClient(ClusterService, transport).listNodes({}, { contextValues: createContextValues().set(key, "from the caller") });
  assert.deepEqual(got, { header: "by interceptor", value: "from the caller", signalAborted: false });
});

test("an answer given as an init shape arrives as a message of the method's output", async () => {
  const transport = createInProcessTransport(clusterRoutes(() => ({ nodes: [{ id: "node-1", address: "10.0.0.1:8080" }] })), []);
  const answer = await createClient(ClusterService, transport).listNodes(create(ListNodesRequestSchema));
  assert.ok(isMessage(answer, ListNodesResponseSchema));
  assert.equal(answer.nodes[0]?.id, "node-1");
});

test("response headers the implementation sets reach the caller", async () => {
  const transport = createInProcessTransport(
    clusterRoutes((_req, ctx) => {
      ctx.responseHeader.set("set-cookie", "gw_session=abc");
      return {};
    }),
    [],
  );
  let header: Headers | undefined;
  await createClient(ClusterService, transport).listNodes({}, { onHeader: (h) => (header = h) });
  assert.equal(header?.get("set-cookie"), "gw_session=abc");
});

test("an error that is not a ConnectError reaches the caller as one, as a served call's does", async () => {
  const transport = createInProcessTransport(
    clusterRoutes(() => {
      throw new Error("boom");
    }),
    [],
  );
  const err = await createClient(ClusterService, transport)
    .listNodes({})
    .then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unknown);
  assert.equal(err.rawMessage, "boom");
});

test("a ConnectError keeps its code and metadata", async () => {
  const transport = createInProcessTransport(
    clusterRoutes(() => {
      throw new ConnectError("no such node", Code.NotFound, new Headers({ "x-gw-error-type": "not_found" }));
    }),
    [],
  );
  const err = await createClient(ClusterService, transport)
    .listNodes({})
    .then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.NotFound);
  assert.equal(err.metadata.get("x-gw-error-type"), "not_found");
});

test("refuses a method no route registers as unimplemented", async () => {
  const transport = createInProcessTransport(() => undefined, []);
  const err = await createClient(ClusterService, transport)
    .listNodes({})
    .then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unimplemented);
});

test("refuses a streaming call as unimplemented", async () => {
  const transport = createInProcessTransport(
    (router) => router.service(reflection.ServerReflection, { serverReflectionInfo: async function* () {} }, { interceptors: [] }),
    [],
  );
  const requests = (async function* () {
    yield create(reflection.ServerReflectionRequestSchema, { host: "" });
  })();
  const err = await transport.stream(reflection.ServerReflection.method.serverReflectionInfo, undefined, undefined, undefined, requests).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unimplemented);
});

test("refuses a registration with handler options it would not apply", () => {
  assert.throws(() => createInProcessTransport(clusterRoutes(() => ({}), { readMaxBytes: 10 }), []), /readMaxBytes/);
});
