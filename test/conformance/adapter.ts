/**
 * The client under test of the MCP conformance suite (auth scenarios): registers the scenario's server URL
 * (the last argument) as an `oauth` client on the gateway named by GW_CONFORMANCE_GATEWAY, opens the
 * authorize URL (the suite's authorization server approves at once and redirects to the gateway's
 * callback), completes the authorization, waits for the client to turn healthy and calls one of its tools.
 * Pre-registered credentials come from MCP_CONFORMANCE_CONTEXT. Exits non-zero with the reason on stderr.
 */
import { randomBytes } from "node:crypto";

const gateway = process.env["GW_CONFORMANCE_GATEWAY"] ?? "";
const serverUrl = process.argv.at(-1) ?? "";

/** A JSON request to the gateway. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gateway}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** Follows the authorization server's redirects until the browser would reach the gateway's callback, and visits it. */
async function consent(authorizeUrl: string): Promise<void> {
  let url = authorizeUrl;
  for (let step = 0; step < 10; step++) {
    const res = await fetch(url, { redirect: "manual" });
    await res.body?.cancel();
    const location = res.headers.get("location");
    if (!location) throw new Error(`the authorization server answered HTTP ${res.status} at ${url} without a redirect`);
    const next = new URL(location, url).href;
    if (next.startsWith(gateway)) {
      const callback = await fetch(next, { redirect: "manual" });
      const page = await callback.text();
      if (callback.status !== 302) throw new Error(`the gateway's callback answered HTTP ${callback.status}: ${page.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").slice(0, 300)}`);
      return;
    }
    url = next;
  }
  throw new Error("the authorization did not reach the callback in 10 redirects");
}

async function main(): Promise<void> {
  if (!gateway || !serverUrl) throw new Error("usage: GW_CONFORMANCE_GATEWAY=<gateway url> adapter <server url>");
  const context = JSON.parse(process.env["MCP_CONFORMANCE_CONTEXT"] ?? "{}") as { client_id?: string; client_secret?: string };
  const name = `conformance_${randomBytes(4).toString("hex")}`;
  const oauthConfig = context.client_id ? { client_id: context.client_id, ...(context.client_secret ? { client_secret: context.client_secret } : {}) } : undefined;
  const created = await call("POST", "/api/mcp/client", {
    name, connection_type: "http", connection_string: serverUrl, auth_type: "oauth", tools_to_execute: ["*"], ...(oauthConfig ? { oauth_config: oauthConfig } : {}),
  });
  if (created.status !== 200) throw new Error(`creating the client failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  await consent(String(created.body["authorize_url"]));
  const done = await call("POST", String(created.body["complete_url"]));
  if (done.status !== 200) throw new Error(`complete-oauth failed: HTTP ${done.status} ${JSON.stringify(done.body)}`);
  const id = String(created.body["client_id"]);
  let client: Record<string, unknown> = {};
  for (let i = 0; i < 100; i++) {
    client = (await call("GET", `/api/mcp/client/${id}`)).body["client"] as Record<string, unknown>;
    if (client["state"] === "healthy") break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (client["state"] !== "healthy") throw new Error(`the client did not turn healthy: ${JSON.stringify(client["last_failure"] ?? client["state"])}`);
  const tools = (client["tools"] as Array<{ name: string }> | undefined) ?? [];
  const tool = tools[0];
  if (tool) {
    const result = await call("POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: `${name}-${tool.name}`, arguments: "{}" } });
    if (result.status !== 200) throw new Error(`the tool call failed: HTTP ${result.status} ${JSON.stringify(result.body)}`);
    process.stdout.write(`${tool.name}: ${String(result.body["content"])}\n`);
  }
  await call("DELETE", `/api/mcp/client/${id}`);
}

main().then(
  // Idle keep-alive connections to the scenario's servers would hold the process open past the suite's timeout.
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
