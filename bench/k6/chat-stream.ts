/**
 * k6 load test of streamed chat completions (`"stream": true`, Server-Sent Events):
 *
 *   k6 run -e GW_URL=http://127.0.0.1:8080 -e GW_VK=sk-gw-... -e GW_MODEL=openai/gpt-4o-mini bench/k6/chat-stream.ts
 *
 * GW_STREAMS concurrent virtual users each stream one answer after another for GW_DURATION. k6 reads a
 * response whole, so the figures are time to the last byte (`http_req_duration`) and time to the first
 * byte (`http_req_waiting`, which ends when the response headers and first bytes arrive).
 */
import { check } from "k6";
import http from "k6/http";
import type { Options } from "k6/options";
import { chatBody, env, gatewayHeaders } from "./common.ts";

export const options: Options = {
  scenarios: {
    streams: {
      executor: "constant-vus",
      vus: Number(env("GW_STREAMS", "8")),
      duration: env("GW_DURATION", "30s"),
    },
  },
  thresholds: {
    http_req_failed: ["rate<0.01"],
    checks: ["rate>0.99"],
  },
};

const url = `${env("GW_URL", "http://127.0.0.1:8080")}/v1/chat/completions`;
const body = chatBody(true);
const params = { headers: gatewayHeaders(), tags: { name: "chat-stream" } };

export default function (): void {
  const res = http.post(url, body, params);
  check(res, {
    "status is 200": (r) => r.status === 200,
    "is an event stream": (r) => String(r.headers["Content-Type"] ?? "").startsWith("text/event-stream"),
    "ends with [DONE]": (r) => typeof r.body === "string" && r.body.includes("data: [DONE]"),
  });
}
