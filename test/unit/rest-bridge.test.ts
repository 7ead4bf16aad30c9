import assert from "node:assert/strict";
import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { create, fromJson, type DescMethodUnary, type Message } from "@bufbuild/protobuf";
import { StructSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createRouterTransport, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import {
  AuthType,
  ClientState,
  ConnectionType,
  McpClientSchema,
  McpClientService,
} from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb.js";
import { ModelService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { McpToolService } from "../../gen/gw/inference/v1/tool_pb.js";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { createRestHandler } from "../../src/server/rest/rest-handler.js";
import { call, startBridge, type Bridge } from "./rest-harness.js";
import { thingService } from "./rest-test-protos.js";

const MAX_BODY = 16 * 1024 * 1024;
const things = thingService();

/** The last request message each fake method saw, and the headers it came with. */
const seen: { request?: Message & Record<string, unknown>; headers?: Headers; intercepted: string[] } = { intercepted: [] };
let releaseSlowCall: (() => void) | undefined;
let slowCallAborted: Promise<void> | undefined;

function remember(request: Message, headers: Headers): void {
  seen.request = request as Message & Record<string, unknown>;
  seen.headers = headers;
}

const routes = (router: ConnectRouter): void => {
  router.service(McpClientService, {
    createMcpClient(req, ctx) {
      remember(req, ctx.requestHeader);
      return { status: "success", message: "created", clientId: "c-1" };
    },
    updateMcpClient(req, ctx) {
      remember(req, ctx.requestHeader);
      return { status: "success", client: { clientId: req.clientId, toolsToExecute: req.client?.toolsToExecute ?? [] } };
    },
    listMcpClients(req, ctx) {
      remember(req, ctx.requestHeader);
      const client = create(McpClientSchema, {
        clientId: "c-1",
        name: "docs",
        connectionType: ConnectionType.HTTP,
        authType: AuthType.PER_USER_HEADERS,
        state: ClientState.NEEDS_REAUTH,
        nodeStates: { "node-a": { state: ClientState.PENDING_VERIFICATION } },
        createdAt: timestampFromDate(new Date(Date.UTC(2024, 0, 2, 3, 4, 5))),
      });
      return { clients: [client], count: 1, totalCount: 1 };
    },
    deleteMcpClient(req) {
      if (req.clientId === "missing") throw new ConnectError("client missing not found", Code.NotFound);
      throw new ConnectError("upstream rejected the sample headers", Code.FailedPrecondition, {
        "gw-http-status": "422",
        "gw-error-type": "upstream_verify_failed",
      });
    },
    async reconnectMcpClient(_req, ctx) {
      // Waits until the bridge aborts the call because its client went away.
      slowCallAborted = new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
      releaseSlowCall?.();
      await slowCallAborted;
      return { status: "success" };
    },
  });
  router.service(SettingsService, {
    updateConfig(req, ctx) {
      remember(req, ctx.requestHeader);
      return { status: "success", config: req.config };
    },
  });
  router.service(ModelService, {
    listModels() {
      return { object: "list", data: [{ id: "m", created: 1700000000n }, { id: "huge", created: 2n ** 60n }] };
    },
  });
  router.service(GovernanceService, {
    createVirtualKey(req, ctx) {
      remember(req, ctx.requestHeader);
      return { virtualKey: req.virtualKey };
    },
  });
  router.service(CredentialService, {
    submitFlow(req, ctx) {
      remember(req, ctx.requestHeader);
      return { status: "success", credentialId: "cred-1" };
    },
  });
  router.service(McpToolService, {
    executeTool() {
      const detail = { mcp_auth_required: { kind: "per_user_headers", submit_url: "http://gw/flows/abc" } };
      throw new ConnectError("authenticate at http://gw/flows/abc", Code.Unauthenticated, { "gw-error-type": "mcp_auth_required" }, [
        { desc: StructSchema, value: fromJson(StructSchema, detail) },
      ]);
    },
  });
  const getThing = things.methods.find((m) => m.name === "GetThing");
  assert.ok(getThing?.methodKind === "unary");
  router.rpc(getThing as DescMethodUnary, (req) => {
    remember(req, new Headers());
    return {};
  });
};

const recordHeaders: Interceptor = (next) => async (req) => {
  seen.intercepted.push(req.method.name);
  return next(req);
};

const services = [McpClientService, SettingsService, ModelService, GovernanceService, CredentialService, McpToolService, things];
let bridge: Bridge;

before(async () => {
  bridge = await startBridge({ services, routes, interceptors: [recordHeaders], maxBodyBytes: MAX_BODY });
});

after(async () => {
  await bridge.close();
});

const json = (value: unknown): string => JSON.stringify(value);

describe("routing", () => {
  test("leaves a path no rule matches to the caller", async () => {
    const res = await call(bridge, "GET", "/api/nothing-here");
    assert.equal(res.status, 404);
    assert.equal(res.json, undefined, "the harness's bare 404, not a bridge envelope");
  });

  test("answers 405 with an Allow header for a path bound to other methods", async () => {
    const res = await call(bridge, "PATCH", "/api/mcp/client/c-1");
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "DELETE, GET, HEAD, PUT");
    assert.equal(res.json.error.type, "method_not_allowed");
  });

  test("runs REST calls through the router's interceptors", async () => {
    seen.intercepted = [];
    await call(bridge, "GET", "/api/mcp/clients");
    assert.deepEqual(seen.intercepted, ["ListMcpClients"]);
  });

  test("percent-decodes path variables", async () => {
    await call(bridge, "PUT", "/api/mcp/client/a%2Fb%20c", json({}));
    assert.equal(seen.request?.["clientId"], "a/b c");
  });

  test("rejects a bad percent-escape in a path variable", async () => {
    const res = await call(bridge, "PUT", "/api/mcp/client/%E0%A4%A", json({}));
    assert.equal(res.status, 400);
    assert.equal(res.json.error.type, "invalid_request");
    assert.match(res.json.error.message, /path parameter "client_id" has a bad percent-escape/);
  });
});

describe("query parameters", () => {
  test("sets scalar fields typed by the field", async () => {
    await call(bridge, "GET", "/api/mcp/clients?limit=5&offset=2&search=do%20c");
    assert.equal(seen.request?.["limit"], 5);
    assert.equal(seen.request?.["offset"], 2);
    assert.equal(seen.request?.["search"], "do c");
  });

  test("sets enum, repeated, int64 and bool fields", async () => {
    await call(bridge, "GET", "/things/t-1?color=dark_blue&tags=a&tags=b&since=9007199254740993&verbose=true");
    assert.equal(seen.request?.["id"], "t-1");
    assert.equal(seen.request?.["color"], 2);
    assert.deepEqual(seen.request?.["tags"], ["a", "b"]);
    assert.equal(seen.request?.["since"], 9007199254740993n);
    assert.equal(seen.request?.["verbose"], true);
  });

  test("rejects an unknown query parameter, naming it", async () => {
    const res = await call(bridge, "GET", "/api/mcp/clients?limt=5");
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /unknown query parameter "limt"; accepted: limit, offset, search/);
  });

  test("rejects a query value of the wrong type", async () => {
    const res = await call(bridge, "GET", "/api/mcp/clients?limit=ten");
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /query parameter "limit": expected an integer \(int32\), got "ten"/);
  });

  test("rejects a single-valued query parameter given twice", async () => {
    const res = await call(bridge, "GET", "/api/mcp/clients?limit=1&limit=2");
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /given 2 times/);
  });

  test("rejects the unspecified enum value in a query parameter", async () => {
    const res = await call(bridge, "GET", "/things/t-1?color=unspecified");
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /query parameter "color": expected one of "red", "dark_blue"/);
  });
});

describe("request bodies", () => {
  test("reads the body into the field the rule names, enums by REST name", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", json({ name: "docs", connection_type: "sse", auth_type: "per_user_headers" }));
    assert.equal(res.status, 200);
    const client = seen.request?.["client"] as Record<string, unknown>;
    assert.equal(client["name"], "docs");
    assert.equal(client["connectionType"], ConnectionType.SSE);
    assert.equal(client["authType"], AuthType.PER_USER_HEADERS);
  });

  test("reads a body:\"*\" rule into the whole request beside the path variable", async () => {
    await call(bridge, "PUT", "/api/mcp/per-user-headers/flows/f-1", json({ headers: { "X-Api-Key": "k" } }));
    assert.equal(seen.request?.["flowId"], "f-1");
    assert.deepEqual(seen.request?.["headers"], { "X-Api-Key": "k" });
  });

  test("rejects a path-bound field repeated in a body:\"*\" body", async () => {
    const res = await call(bridge, "PUT", "/api/mcp/per-user-headers/flows/f-1", json({ flow_id: "other" }));
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /field "flow_id" is set by the URL path/);
  });

  test("reads int64 from a decimal string", async () => {
    await call(bridge, "POST", "/api/governance/virtual-keys", json({ name: "vk", rate_limit: { token_max_limit: "123456789012" } }));
    const vk = seen.request?.["virtualKey"] as { rateLimit: { tokenMaxLimit: bigint } };
    assert.equal(vk.rateLimit.tokenMaxLimit, 123456789012n);
  });

  test("treats an empty body as an empty object", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", "");
    assert.equal(res.status, 200);
  });

  test("accepts a JSON body without a content-type", async () => {
    const res = await fetch(`${bridge.url}/api/mcp/client`, { method: "POST", body: new TextEncoder().encode(json({ name: "n" })) });
    assert.equal(res.status, 200);
  });

  test("rejects malformed JSON with the parse error", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", '{"name": "docs",');
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /^request body is not valid JSON: /);
  });

  test("rejects a body that is not a JSON object", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", "[1,2]");
    assert.equal(res.status, 400);
    assert.equal(res.json.error.message, "request body must be a JSON object, got an array");
  });

  test("rejects a body that is not valid UTF-8", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]));
    assert.equal(res.status, 400);
    assert.equal(res.json.error.message, "request body is not valid UTF-8");
  });

  test("reads a body that starts with a UTF-8 byte-order mark as the JSON after it", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", new Uint8Array([0xef, 0xbb, 0xbf, ...Buffer.from('{"foo": 1}')]));
    // The JSON parsed: the bridge got as far as naming the unknown field.
    assert.equal(res.status, 400);
    assert.equal(res.json.error.message, 'unknown field "client.foo"');
  });

  test("rejects a non-JSON content-type with 415", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", "name=docs", { "content-type": "application/x-www-form-urlencoded" });
    assert.equal(res.status, 415);
    assert.equal(res.json.error.type, "unsupported_media_type");
  });

  test("rejects an unknown top-level field, naming its full path", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", json({ name: "docs", foo: 1 }));
    assert.equal(res.status, 400);
    assert.equal(res.json.error.message, 'unknown field "client.foo"');
  });

  test("rejects an unknown nested field, naming its full path", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", json({ stdio_config: { command: "x", bogus: true } }));
    assert.equal(res.status, 400);
    assert.equal(res.json.error.message, 'unknown field "client.stdio_config.bogus"');
  });

  test("rejects a wrong type, naming the path and the expected type", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", json({ name: 5 }));
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /^client\.name: expected a string/);
  });

  test("rejects an int32 out of range", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", json({ tool_sync_interval: 2 ** 31 }));
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /client\.tool_sync_interval: 2147483648 is out of range for int32/);
  });

  test("rejects the unspecified enum value, listing the allowed ones", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", json({ connection_type: "unspecified" }));
    assert.equal(res.status, 400);
    assert.equal(res.json.error.message, 'client.connection_type: expected one of "http", "sse", "stdio", got "unspecified"');
  });
});

describe("body size limit", () => {
  test("answers 413 to a 20 MB body with a content-length, and keeps serving", async () => {
    const res = await call(bridge, "POST", "/api/mcp/client", new Uint8Array(20 * 1024 * 1024).fill(0x20));
    assert.equal(res.status, 413);
    assert.equal(res.json.error.type, "payload_too_large");
    assert.equal((await call(bridge, "GET", "/api/mcp/clients")).status, 200);
  });

  test("answers 413 to a 20 MB chunked body, and keeps serving", async () => {
    const chunk = new Uint8Array(1024 * 1024).fill(0x20);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 20) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(`${bridge.url}/api/mcp/client`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
      duplex: "half",
    } as RequestInit);
    assert.equal(res.status, 413);
    await res.body?.cancel();
    assert.equal((await call(bridge, "GET", "/api/mcp/clients")).status, 200);
  });

  test("answers 413 over HTTP/2 and keeps the session usable", async () => {
    const transport = createRouterTransport(routes);
    const rest = createRestHandler({ services, transport, maxBodyBytes: 1024 * 1024 });
    const server = http2.createServer((req, res) => void rest(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const request = (method: string, path: string, body?: Uint8Array) =>
      new Promise<number>((resolve, reject) => {
        const stream = session.request({ ":method": method, ":path": path, "content-type": "application/json" });
        let status = 0;
        stream.on("response", (headers) => (status = Number(headers[":status"])));
        // The response's end, not the stream's close: after a 413 the client's own upload is cut short.
        stream.on("end", () => resolve(status));
        stream.on("error", reject);
        stream.resume();
        if (body !== undefined) for (let i = 0; i < 4; i++) stream.write(body);
        stream.end();
      });
    try {
      assert.equal(await request("POST", "/api/mcp/client", new Uint8Array(1024 * 1024).fill(0x20)), 413);
      assert.equal(await request("GET", "/api/mcp/clients"), 200);
    } finally {
      // destroy, not close: Node's client keeps the reset upload's stream open until its session ends.
      session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("update_mask", () => {
  test("derives the mask from the JSON keys of a PUT body", async () => {
    await call(bridge, "PUT", "/api/mcp/client/c-1", json({ tools_to_execute: [] }));
    assert.deepEqual((seen.request?.["updateMask"] as { paths: string[] }).paths, ["tools_to_execute"]);
  });

  test("derives nested paths from a PATCH body", async () => {
    await call(bridge, "PATCH", "/config", json({ client: { prometheus_labels: [] } }));
    assert.deepEqual((seen.request?.["updateMask"] as { paths: string[] }).paths, ["client.prometheus_labels"]);
  });

  test("sends an empty mask for an empty body", async () => {
    await call(bridge, "PUT", "/api/mcp/client/c-1", "");
    assert.deepEqual((seen.request?.["updateMask"] as { paths: string[] }).paths, []);
  });
});

describe("responses", () => {
  test("writes snake_case names, REST enum names, maps of messages and timestamps", async () => {
    const res = await call(bridge, "GET", "/api/mcp/clients");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    const [client] = res.json.clients;
    assert.equal(client.client_id, "c-1");
    assert.equal(client.connection_type, "http");
    assert.equal(client.auth_type, "per_user_headers");
    assert.equal(client.state, "needs_reauth");
    assert.deepEqual(client.node_states, { "node-a": { state: "pending_verification", tools_count: 0 } });
    assert.equal(client.created_at, "2024-01-02T03:04:05Z");
    assert.equal(res.json.total_count, 1);
  });

  test("writes documented defaults explicitly", async () => {
    const [client] = (await call(bridge, "GET", "/api/mcp/clients")).json.clients;
    assert.deepEqual(client.tools_to_execute, []);
    assert.equal(client.tool_sync_interval, 0);
    assert.equal(client.disabled, false);
    assert.equal(client.connection_string, "");
  });

  test("writes int64 as a number when exact and as a string beyond 2^53", async () => {
    const res = await call(bridge, "GET", "/v1/models");
    assert.equal(res.json.data[0].created, 1700000000);
    assert.equal(res.json.data[1].created, "1152921504606846976");
  });
});

describe("errors from services", () => {
  test("uses gw-http-status and gw-error-type metadata", async () => {
    const res = await call(bridge, "DELETE", "/api/mcp/client/c-1");
    assert.equal(res.status, 422);
    assert.deepEqual(res.json, { error: { type: "upstream_verify_failed", message: "upstream rejected the sample headers" } });
  });

  test("maps a Connect code to its HTTP status and snake_case type", async () => {
    const res = await call(bridge, "DELETE", "/api/mcp/client/missing");
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { error: { type: "not_found", message: "client missing not found" } });
  });

  test("puts the fields of a Struct error detail beside the error", async () => {
    const body = { id: "call-1", type: "function", function: { name: "docs-search", arguments: "{}" } };
    const res = await call(bridge, "POST", "/v1/mcp/tool/execute", json(body));
    assert.equal(res.status, 401);
    assert.equal(res.json.error.type, "mcp_auth_required");
    assert.deepEqual(res.json.mcp_auth_required, { kind: "per_user_headers", submit_url: "http://gw/flows/abc" });
  });
});

describe("forwarding", () => {
  test("forwards the client's headers but not the HTTP body or hop-by-hop ones", async () => {
    // node:http rather than fetch: fetch refuses to send a Connection header.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = http.request(`${bridge.url}/api/mcp/client`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: "Bearer secret",
          "x-gw-temp-token": "tt",
          "user-agent": "rest-test/1",
          "x-drop-me": "1",
          connection: "keep-alive, x-drop-me",
        },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("error", reject);
      req.end(json({ name: "n" }));
    });
    assert.equal(status, 200);
    const headers = seen.headers!; // ! : the create call above always records its headers
    assert.equal(headers.get("authorization"), "Bearer secret");
    assert.equal(headers.get("x-gw-temp-token"), "tt");
    assert.equal(headers.get("user-agent"), "rest-test/1");
    assert.equal(headers.get("x-drop-me"), null);
    assert.notEqual(headers.get("content-type"), "application/json", "the RPC carries its own content-type");
    assert.equal(headers.get("host"), null);
  });

  test("aborts the call when the client goes away", async () => {
    const started = new Promise<void>((resolve) => (releaseSlowCall = resolve));
    const client = new AbortController();
    const pending = fetch(`${bridge.url}/api/mcp/client/c-1/reconnect`, { method: "POST", signal: client.signal }).catch(() => undefined);
    await started;
    client.abort();
    await pending;
    await slowCallAborted; // resolves only when the service's signal fired
  });
});

describe("hostile input", () => {
  test("never answers 5xx to random JSON bodies, paths and queries", async () => {
    let seed = 12345;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const keys = ["name", "client", "prometheus_labels", "connection_type", "headers", "value", "tools_to_execute", "rate_limit",
      "token_max_limit", "budget", "flow_id", "__proto__", "constructor", "stdio_config", "args", "tool_sync_interval"];
    const leaves = [null, true, 0, -1, 1.5, 2 ** 53, "", "http", "-9", "2024-01-01T00:00:00Z", "\ud800", "aGk="];
    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.2) return pick(leaves);
      if (r < 0.35) return Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [pick(keys), value(depth + 1)]));
    };
    const targets = [
      ["POST", "/api/mcp/client"],
      ["PUT", "/api/mcp/client/x"],
      ["PATCH", "/config"],
      ["POST", "/api/governance/virtual-keys"],
      ["PUT", "/api/mcp/per-user-headers/flows/f"],
      ["GET", `/api/mcp/clients?limit=${"9".repeat(60)}`],
      ["GET", "/things/%ff%fe?color=%ff&tags=&since=-0&verbose=1"],
    ] as const;
    const raw = ["", "{", "null", "[]", '"x"', '{"a":1,}', "\u0000"];
    for (let i = 0; i < 300; i++) {
      const [method, path] = pick(targets);
      const body = method === "GET" ? undefined : random() < 0.15 ? pick(raw) : json(value(0));
      const res = await call(bridge, method, path, body);
      assert.ok(res.status < 500, `${method} ${path} ${String(body)} -> ${res.status}`);
    }
  });
});
