/**
 * Upstream faults through the real app and the official SDK: resets before the headers and mid-stream, an
 * upstream that never answers or stalls, oversized and endless answers, broken JSON, the wrong content type
 * and 429s each end as a provider_* error, fallbacks rescue the request, and the provider's timeouts and
 * response cap are set and checked through the admin API.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startFaultyUpstream, type Fault, type FaultyUpstream } from "../fixtures/faulty-upstream.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { errorType, fileKey, refusal, sdk } from "../helpers/inference.js";

let upstream: FaultyUpstream;
let app: TestApp;
let client: OpenAI;

/** Tight limits, so a silent upstream fails in a second and a 20 MB answer passes the cap. */
const NETWORK = { default_request_timeout_in_seconds: 1, stream_idle_timeout_in_seconds: 1, max_response_bytes: 1_048_576 };

before(async () => {
  upstream = await startFaultyUpstream();
  const inference = inferenceOptionsFromFile(
    {
      faulty: { keys: [fileKey("f-1")], network_config: { base_url: upstream.url, ...NETWORK } },
      healthy: { keys: [fileKey("h-1")], network_config: { base_url: upstream.url } },
    },
    [],
  );
  app = await startApp({ inference });
  client = sdk(app, null);
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

function ask(fault: Fault | "ok", extra: Record<string, unknown> = {}) {
  return client.chat.completions.create({ model: `faulty/${fault}`, messages: [{ role: "user", content: "hi" }], ...extra });
}

/** The error a stream ends with, whether it fails before its headers or as an error event. */
async function streamRefusal(fault: Fault): Promise<InstanceType<typeof OpenAI.APIError>> {
  return refusal(
    (async () => {
      const stream = await client.chat.completions.create({ model: `faulty/${fault}`, messages: [{ role: "user", content: "hi" }], stream: true });
      for await (const _chunk of stream) {
        // Read to the end; the failure surfaces here or at the start.
      }
    })(),
  );
}

const JSON_FAULTS: [Fault, number, string, RegExp][] = [
  ["reset-before-headers", 502, "provider_unavailable", /could not be reached/],
  ["reset-mid-stream", 502, "provider_unavailable", /could not be reached/],
  ["never-answers", 504, "provider_timeout", /no response headers within 1000 ms/],
  ["stalls-mid-stream", 504, "provider_timeout", /did not answer in time/],
  ["oversized", 502, "provider_unavailable", /longer than 1048576 bytes/],
  ["endless", 502, "provider_unavailable", /longer than 1048576 bytes/],
  ["invalid-json", 502, "provider_unavailable", /not a JSON object/],
  ["wrong-content-type", 502, "provider_unavailable", /not a JSON object/],
  ["rate-limited", 429, "provider_rate_limited", /slow down/],
  ["error-in-body", 502, "provider_unavailable", /with an error in the body: upstream failed/],
];

describe("a non-streaming request to a faulty upstream", () => {
  for (const [fault, status, type, message] of JSON_FAULTS) {
    test(`${fault} ends as ${status} ${type}`, async () => {
      const err = await refusal(ask(fault));
      assert.equal(err.status, status, err.message);
      assert.equal(errorType(err), type);
      assert.match(err.message, message);
    });
  }
});

test("a 429 passes the upstream's retry-after on to the caller", async () => {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "faulty/rate-limited", messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "1");
});

describe("a streamed request to a faulty upstream", () => {
  const STREAM_FAULTS: [Fault, string, RegExp][] = [
    ["reset-before-headers", "provider_unavailable", /could not be reached/],
    ["reset-mid-stream", "provider_unavailable", /could not be reached/],
    ["never-answers", "provider_timeout", /no response headers within 1000 ms/],
    ["stalls-mid-stream", "provider_timeout", /did not answer in time/],
    ["endless", "provider_unavailable", /longer than 1048576 bytes/],
    ["oversized", "provider_unavailable", /longer than 1048576 bytes/],
    ["invalid-json", "provider_unavailable", /stream event that is not a JSON object/],
    ["wrong-content-type", "provider_unavailable", /content type text\/html instead of text\/event-stream/],
    ["rate-limited", "provider_rate_limited", /slow down/],
    ["silent-after-headers", "provider_timeout", /did not answer in time/],
    ["empty-stream", "provider_unavailable", /ended its stream before the answer was complete/],
    ["error-in-body", "provider_unavailable", /failed mid-stream: upstream failed/],
  ];
  for (const [fault, type, message] of STREAM_FAULTS) {
    test(`${fault} ends as ${type}`, async () => {
      const err = await streamRefusal(fault);
      assert.equal(errorType(err) ?? (err.error as { error?: { type?: unknown } } | undefined)?.error?.type, type, err.message);
      assert.match(err.message, message);
    });
  }
});

describe("fallbacks", () => {
  for (const [fault] of JSON_FAULTS) {
    test(`rescue a request whose primary fails with ${fault}`, async () => {
      const completion = await ask(fault, { fallbacks: ["healthy/ok"] });
      assert.equal(completion.choices[0]?.message.content, "fine");
    });
  }

  for (const fault of ["wrong-content-type", "silent-after-headers", "empty-stream"] as const) {
    test(`rescue a stream whose primary fails before its first event with ${fault}`, async () => {
      const stream = await client.chat.completions.create({ model: `faulty/${fault}`, messages: [{ role: "user", content: "hi" }], stream: true, ...{ fallbacks: ["healthy/ok"] } });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      assert.equal(text, "fine");
    });
  }
});

describe("network_config timeouts and response cap", () => {
  const provider = (network: Record<string, unknown>) => ({ name: "bounded", keys: [fileKey("b-1")], network_config: { base_url: upstream.url, ...network } });

  after(async () => {
    await api(app, "DELETE", "/api/v1/providers/bounded");
  });

  test("are stored and shown as set", async () => {
    const created = await api(app, "POST", "/api/v1/providers", provider(NETWORK));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const got = await api(app, "GET", "/api/v1/providers/bounded");
    assert.deepEqual(
      {
        default_request_timeout_in_seconds: got.body.provider.network_config.default_request_timeout_in_seconds,
        stream_idle_timeout_in_seconds: got.body.provider.network_config.stream_idle_timeout_in_seconds,
        max_response_bytes: got.body.provider.network_config.max_response_bytes,
      },
      NETWORK,
    );
  });

  test("apply to /v1 as soon as they are updated", async () => {
    const updated = await api(app, "PUT", "/api/v1/providers/bounded", { network_config: { base_url: upstream.url, max_response_bytes: 2048 } });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const err = await refusal(client.chat.completions.create({ model: "bounded/endless", messages: [{ role: "user", content: "hi" }] }));
    assert.match(err.message, /longer than 2048 bytes/);
  });

  const OUT_OF_RANGE: [string, Record<string, unknown>][] = [
    ["default_request_timeout_in_seconds", { default_request_timeout_in_seconds: 3601 }],
    ["default_request_timeout_in_seconds", { default_request_timeout_in_seconds: -1 }],
    ["stream_idle_timeout_in_seconds", { stream_idle_timeout_in_seconds: 3601 }],
    ["stream_idle_timeout_in_seconds", { stream_idle_timeout_in_seconds: -5 }],
    ["max_response_bytes", { max_response_bytes: 10 }],
    ["max_response_bytes", { max_response_bytes: 2_000_000_000 }],
  ];
  for (const [field, network] of OUT_OF_RANGE) {
    test(`refuse ${field} ${JSON.stringify(Object.values(network)[0])} with a 400 naming it`, async () => {
      const res = await api(app, "PUT", "/api/v1/providers/bounded", { network_config: { base_url: upstream.url, ...network } });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, new RegExp(field));
    });
  }

  test("an out-of-range value in the config file names its path", () => {
    assert.throws(
      () => inferenceOptionsFromFile({ bounded: { keys: [fileKey("b-1")], network_config: { base_url: upstream.url, stream_idle_timeout_in_seconds: 7200 } } }, []),
      /providers\.bounded\.network_config\.stream_idle_timeout_in_seconds/,
    );
  });
});
