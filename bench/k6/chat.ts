/**
 * k6 load test of POST /v1/chat/completions (non-streaming), run by k6 itself (not by node):
 *
 *   k6 run -e GW_URL=http://127.0.0.1:8080 -e GW_VK=sk-gw-... -e GW_MODEL=openai/gpt-4o-mini bench/k6/chat.ts
 *
 * A constant arrival rate (GW_RATE requests/s for GW_DURATION), so a slow gateway shows up as latency and
 * dropped iterations instead of silently lowering the offered load.
 */
import { check } from "k6";
import http from "k6/http";
import type { Options } from "k6/options";
import { chatBody, env, gatewayHeaders } from "./common.ts";

export const options: Options = {
  scenarios: {
    chat: {
      executor: "constant-arrival-rate",
      rate: Number(env("GW_RATE", "200")),
      timeUnit: "1s",
      duration: env("GW_DURATION", "30s"),
      preAllocatedVUs: 32,
      maxVUs: 256,
    },
  },
  thresholds: {
    http_req_failed: ["rate<0.01"],
    "http_req_duration{expected_response:true}": ["p(99)<2000"],
  },
};

const url = `${env("GW_URL", "http://127.0.0.1:8080")}/v1/chat/completions`;
const body = chatBody(false);
const params = { headers: gatewayHeaders(), tags: { name: "chat" } };

export default function (): void {
  const res = http.post(url, body, params);
  check(res, {
    "status is 200": (r) => r.status === 200,
    "has a choice": (r) => {
      const parsed = r.json() as { choices?: unknown[] } | null;
      return Array.isArray(parsed?.choices) && parsed.choices.length > 0;
    },
  });
}
