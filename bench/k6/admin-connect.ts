/**
 * k6 load test of an admin RPC over the Connect protocol (JSON over HTTP): ListMcpClients, the read a
 * dashboard polls. With admin auth on, GW_ADMIN_USER and GW_ADMIN_PASSWORD sign in once in setup().
 *
 *   k6 run -e GW_URL=http://127.0.0.1:8080 bench/k6/admin-connect.ts
 *
 * GW_RPC names another method without a request body, e.g. gw.routing.v1.GovernanceService/ListVirtualKeys.
 */
import { check } from "k6";
import http from "k6/http";
import type { Options } from "k6/options";
import { env } from "./common.ts";

export const options: Options = {
  scenarios: {
    admin: {
      executor: "constant-arrival-rate",
      rate: Number(env("GW_RATE", "100")),
      timeUnit: "1s",
      duration: env("GW_DURATION", "30s"),
      preAllocatedVUs: 16,
      maxVUs: 128,
    },
  },
  thresholds: { http_req_failed: ["rate<0.01"] },
};

const base = env("GW_URL", "http://127.0.0.1:8080");
const rpc = env("GW_RPC", "gw.admin.v1.McpClientService/ListMcpClients");

/** Signs in when admin credentials are given; the token reaches every iteration as setup()'s result. */
export function setup(): { token: string } {
  const username = __ENV["GW_ADMIN_USER"];
  const password = __ENV["GW_ADMIN_PASSWORD"];
  if (!username || !password) return { token: "" };
  const res = http.post(`${base}/gw.admin.v1.SessionService/Login`, JSON.stringify({ username, password }), {
    headers: { "content-type": "application/json" },
  });
  const token = (res.json() as { token?: string } | null)?.token;
  if (res.status !== 200 || !token) throw new Error(`sign-in failed: HTTP ${res.status} ${String(res.body)}`);
  return { token };
}

export default function (data: { token: string }): void {
  const headers: Record<string, string> = { "content-type": "application/json", "connect-protocol-version": "1" };
  if (data.token) headers["authorization"] = `Bearer ${data.token}`;
  const res = http.post(`${base}/${rpc}`, "{}", { headers, tags: { name: rpc } });
  check(res, { "status is 200": (r) => r.status === 200 });
}
