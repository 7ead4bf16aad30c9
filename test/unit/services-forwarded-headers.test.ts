/** HeaderForwarding: which caller headers client.allowed_headers sends upstream. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { HeaderForwarding } from "../../src/inference/forwarded-headers.js";

/** Headers a gateway-bound request carries that are the gateway's, never the upstream's. */
const OWNED = {
  connection: "keep-alive",
  "keep-alive": "timeout=5",
  "transfer-encoding": "chunked",
  te: "trailers",
  trailer: "x-checksum",
  upgrade: "websocket",
  "proxy-authorization": "Basic cHJveHk=",
  "proxy-connection": "keep-alive",
  host: "gateway.local:8080",
  expect: "100-continue",
  "content-length": "42",
  "content-type": "application/json",
  "content-encoding": "gzip",
  "accept-encoding": "gzip, br",
  cookie: "session=abc",
  authorization: "Bearer sk-gw-caller",
  "x-api-key": "sk-gw-caller",
  "x-goog-api-key": "sk-gw-caller",
  "api-key": "sk-gw-caller",
  "x-gw-vk": "sk-gw-caller",
  "x-gw-dim-team": "a",
};

describe("HeaderForwarding", () => {
  test('forwards every caller header with "*"', () => {
    assert.deepEqual(new HeaderForwarding(["*"]).pick({ "x-team": "a", "user-agent": "sdk/1", "x-stainless-os": "Linux" }), {
      "x-team": "a",
      "user-agent": "sdk/1",
      "x-stainless-os": "Linux",
    });
  });

  test('never forwards the headers the gateway owns, even with "*"', () => {
    assert.equal(new HeaderForwarding(["*"]).pick(OWNED), undefined);
  });

  test("never forwards an owned header the list names", () => {
    assert.equal(new HeaderForwarding(["authorization", "Cookie", "x-gw-*", "proxy-*"]).pick(OWNED), undefined);
  });

  test("never forwards the headers the caller's Connection header names", () => {
    assert.deepEqual(new HeaderForwarding(["*"]).pick({ connection: "keep-alive, X-Hop", "x-hop": "1", "x-team": "a" }), { "x-team": "a" });
  });

  test("matches listed names whatever their case", () => {
    assert.deepEqual(new HeaderForwarding(["X-Team"]).pick({ "x-team": "a", "x-other": "b" }), { "x-team": "a" });
  });

  test('forwards every header a prefix entry ending in "*" covers', () => {
    const forwarding = new HeaderForwarding(["X-Stainless-*"]);
    assert.deepEqual(forwarding.pick({ "x-stainless-os": "Linux", "x-stainless-arch": "x64", "x-stainlessly": "no", "x-team": "a" }), {
      "x-stainless-os": "Linux",
      "x-stainless-arch": "x64",
    });
  });

  test("forwards nothing with an empty list", () => {
    assert.equal(new HeaderForwarding([]).pick({ "x-team": "a", "user-agent": "sdk/1" }), undefined);
  });

  test("joins the values of a header the caller sent several times", () => {
    assert.deepEqual(new HeaderForwarding(["*"]).pick({ "x-tag": ["a", "b"] }), { "x-tag": "a, b" });
  });
});
