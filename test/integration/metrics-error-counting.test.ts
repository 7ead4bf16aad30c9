/**
 * Failures the metrics count through the real app: /v1 requests refused for their body or headers
 * before any routing (gw_error_requests_total with a caller_* error_type), and failed gRPC and
 * gRPC-Web calls (http_requests_total under the HTTP status their code maps to, not the 200 they
 * travel in).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";
import { fileKey } from "../helpers/inference.js";

const KEY = "sk-gw-counted";

let app: TestApp;

before(async () => {
  app = await startApp({
    inference: inferenceOptionsFromFile(
      // Nothing listens there: no request of these tests reaches a provider.
      { openai: { keys: [fileKey("oa-1")], networkConfig: { baseUrl: "http://127.0.0.1:9" } } },
      [{ id: "vk-counted", name: "counted", value: KEY, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] }],
    ),
  });
});

after(async () => {
  await app.stop();
});

/** Scrapes until `done` holds (bounded: 100 tries, 20 ms apart); recording is batched off the request path. */
async function scrapeUntil(done: (s: Sample[]) => boolean): Promise<Sample[]> {
  let samples: Sample[] = [];
  for (let i = 0; i < 100; i++) {
    samples = parseExposition(await (await fetch(`${app.url}/metrics`)).text());
    if (done(samples)) return samples;
    await new Promise((r) => setTimeout(r, 20));
  }
  return samples;
}

describe("malformed /v1 requests", () => {
  test("a chat completion whose messages is not a list is counted as caller_invalid_request with its model and key", async () => {
    const res = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: "hi" }, { authorization: `Bearer ${KEY}` });
    assert.equal(res.status, 400);
    const match = { method: "chat", model: "gpt-4o-mini", provider: "openai", virtual_key_id: "vk-counted", status_code: "400", error_type: "caller_invalid_request" };
    const samples = await scrapeUntil((s) => total(s, "gw_error_requests_total", match) === 1);
    assert.equal(total(samples, "gw_error_requests_total", match), 1);
  });

  test("a /v1/responses body that is not JSON is counted as caller_invalid_request", async () => {
    const res = await api(app, "POST", "/v1/responses", "{not json");
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "caller_invalid_request");
    const match = { method: "responses", model: "", status_code: "400", error_type: "caller_invalid_request" };
    const samples = await scrapeUntil((s) => total(s, "gw_error_requests_total", match) === 1);
    assert.equal(total(samples, "gw_error_requests_total", match), 1);
  });

  test("a malformed request counts as one inference request with no retries", async () => {
    await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [] });
    const match = { method: "chat", model: "gpt-4o-mini", virtual_key_id: "" };
    const samples = await scrapeUntil((s) => total(s, "gw_upstream_requests_total", match) === 1);
    assert.equal(total(samples, "gw_upstream_requests_total", match), 1);
    assert.equal(total(samples, "gw_request_retries_sum", match), 0);
    assert.equal(total(samples, "gw_request_retries_count", match), 1);
  });
});

describe("failed RPCs in http_requests_total", () => {
  const notFound = (err: unknown) => err instanceof ConnectError && err.code === Code.NotFound;

  test("a gRPC call that fails with not_found is counted as 404, not 200", async () => {
    const rpc = clientFor(McpClientService, app.url, "grpc");
    await assert.rejects(rpc.deleteMcpClient({ clientId: "does-not-exist" }), notFound);
    const path = "/gw.admin.v1.McpClientService/DeleteMcpClient";
    const samples = await scrapeUntil((s) => total(s, "http_requests_total", { path, status: "404" }) === 1);
    assert.equal(total(samples, "http_requests_total", { path, status: "404" }), 1);
    assert.equal(total(samples, "http_requests_total", { path, status: "200" }), 0);
  });

  test("a gRPC-Web call that fails with not_found is counted as 404, not 200", async () => {
    const rpc = clientFor(McpClientService, app.url, "grpc-web");
    await assert.rejects(rpc.reconnectMcpClient({ clientId: "does-not-exist" }), notFound);
    const path = "/gw.admin.v1.McpClientService/ReconnectMcpClient";
    const samples = await scrapeUntil((s) => total(s, "http_requests_total", { path, status: "404" }) === 1);
    assert.equal(total(samples, "http_requests_total", { path, status: "404" }), 1);
    assert.equal(total(samples, "http_requests_total", { path, status: "200" }), 0);
  });

  test("a gRPC call that succeeds is still counted as 200", async () => {
    await clientFor(McpClientService, app.url, "grpc").listMcpClients({});
    const path = "/gw.admin.v1.McpClientService/ListMcpClients";
    const samples = await scrapeUntil((s) => total(s, "http_requests_total", { path, status: "200" }) === 1);
    assert.equal(total(samples, "http_requests_total", { path, status: "200" }), 1);
  });
});
