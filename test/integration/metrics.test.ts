/**
 * /metrics through the real app: counters and histogram counts equal the scripted traffic label by label,
 * custom labels and dimension headers, basic auth, `promtool check metrics`, and a real Prometheus server
 * scraping the gateway with basic auth.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";
import { freePort } from "../helpers/ports.js";

const TIMING = { healthyCheckMs: 60_000, unstableCheckMs: 60_000, retries: 3, retryDelayMs: 10, operationTimeoutMs: 2_000 };
const ADMIN = { enabled: true, username: "admin", password: "metrics-pw", sessionTtlMs: 3_600_000 };
const BASIC = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString("base64")}`;

async function scrape(app: TestApp, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`${app.url}/metrics`, { headers });
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
}

/** Scrapes until `done` holds for the samples (bounded: 100 tries, 20 ms apart), then returns the last scrape. */
async function scrapeUntil(app: TestApp, done: (s: Sample[]) => boolean, headers: Record<string, string> = {}): Promise<Sample[]> {
  let samples: Sample[] = [];
  for (let i = 0; i < 100; i++) {
    samples = await scrape(app, headers);
    if (done(samples)) return samples;
    await new Promise((r) => setTimeout(r, 20));
  }
  return samples;
}

/** True when the binary is on PATH; under CI (which installs it) a missing binary must fail the test, not skip it. */
function hasBinary(name: string): boolean {
  return process.env["CI"] === "true" || spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;
}

function execute(app: TestApp, name: string, args: unknown = {}) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "call_1", type: "function", function: { name, arguments: JSON.stringify(args) } });
}

describe("metrics after a scripted mix of REST, Connect and MCP calls", () => {
  let app: TestApp;
  let fixture: McpFixture;
  /** "path method status" -> requests sent. */
  const sent = new Map<string, number>();
  const count = (path: string, method: string, status: number) => {
    const key = `${path} ${method} ${status}`;
    sent.set(key, (sent.get(key) ?? 0) + 1);
  };

  before(async () => {
    fixture = await startMcpFixture({ resultShapeTools: true });
    app = await startApp({ mcpTiming: TIMING });

    let res = await api(app, "POST", "/api/mcp/client", { name: "m", connection_type: "http", connection_string: fixture.httpUrl, tools_to_execute: ["echo", "fail"] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    count("/api/mcp/client", "POST", 200);
    for (let i = 0; i < 2; i++) {
      res = await api(app, "GET", "/api/mcp/clients");
      count("/api/mcp/clients", "GET", res.status);
    }
    res = await api(app, "POST", "/api/mcp/client", { name: "bad name!", connection_type: "http", connection_string: fixture.httpUrl });
    assert.ok(res.status >= 400 && res.status < 500);
    count("/api/mcp/client", "POST", res.status);
    res = await api(app, "DELETE", "/api/mcp/client/does-not-exist");
    assert.equal(res.status, 404);
    count("/api/mcp/client/{client_id}", "DELETE", 404);
    res = await api(app, "GET", "/no/such/route/xyz");
    count("unmatched", "GET", res.status);
    for (const [tool, expectStatus] of [["m-echo", 200], ["m-echo", 200], ["m-fail", 200], ["m-add", 403]] as const) {
      res = await execute(app, tool, tool === "m-add" ? { a: 1, b: 2 } : { text: "x" });
      assert.equal(res.status, expectStatus, JSON.stringify(res.body));
      count("/v1/mcp/tool/execute", "POST", res.status);
    }
    const rpc = clientFor(McpClientService, app.url, "connect");
    await rpc.listMcpClients({});
    count("/gw.admin.v1.McpClientService/ListMcpClients", "POST", 200);
    await assert.rejects(rpc.deleteMcpClient({ clientId: "does-not-exist" }), (err: unknown) => err instanceof ConnectError && err.code === Code.NotFound);
    count("/gw.admin.v1.McpClientService/DeleteMcpClient", "POST", 404);
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  const matches = (samples: Sample[]) =>
    [...sent].every(([key, n]) => {
      const [path, method, status] = key.split(" ") as [string, string, string];
      return total(samples, "http_requests_total", { path, method, status }) === n;
    });

  test("http_requests_total equals the requests sent, by route template, method and status", async () => {
    const samples = await scrapeUntil(app, matches);
    for (const [key, n] of sent) {
      const [path, method, status] = key.split(" ") as [string, string, string];
      assert.equal(total(samples, "http_requests_total", { path, method, status }), n, key);
    }
    const others = samples.filter((s) => s.name === "http_requests_total" && s.labels["path"] !== "/metrics");
    assert.equal(others.reduce((sum, s) => sum + s.value, 0), [...sent.values()].reduce((a, b) => a + b, 0));
  });

  test("the three http histograms count every request sent", async () => {
    const samples = await scrapeUntil(app, matches);
    for (const [key, n] of sent) {
      const [path, method, status] = key.split(" ") as [string, string, string];
      for (const h of ["http_request_duration_seconds", "http_request_size_bytes", "http_response_size_bytes"]) {
        assert.equal(total(samples, `${h}_count`, { path, method, status }), n, `${h} ${key}`);
      }
    }
  });

  test("the path label never carries a raw path", async () => {
    const samples = await scrapeUntil(app, matches);
    assert.ok(!samples.some((s) => (s.labels["path"] ?? "").includes("does-not-exist") || (s.labels["path"] ?? "").includes("xyz")));
  });

  test("response sizes are the bytes of the body", async () => {
    const body = await (await fetch(`${app.url}/health`)).text();
    const samples = await scrapeUntil(app, (s) => total(s, "http_response_size_bytes_count", { path: "/health" }) === 1);
    assert.equal(total(samples, "http_response_size_bytes_sum", { path: "/health" }), Buffer.byteLength(body));
  });

  test("MCP tool executions are counted by client, tool and error_type", async () => {
    const samples = await scrape(app);
    const name = "gw_mcp_client_operation_duration_seconds_count";
    assert.equal(total(samples, name, { mcp_client: "m", mcp_tool_name: "echo", mcp_method: "tools/call", error_type: "" }), 2);
    assert.equal(total(samples, name, { mcp_client: "m", mcp_tool_name: "fail", error_type: "_OTHER" }), 1);
    assert.equal(total(samples, name, { mcp_client: "m", mcp_tool_name: "add", error_type: "_OTHER" }), 1);
    assert.equal(total(samples, name), 4);
  });

  test("the MCP metric has no provider or model label", async () => {
    const samples = (await scrape(app)).filter((s) => s.name.startsWith("gw_mcp_client_operation_duration_seconds"));
    assert.ok(samples.length > 0);
    for (const s of samples) {
      assert.equal(s.labels["provider"], undefined);
      assert.equal(s.labels["model"], undefined);
    }
  });

  test("promtool check metrics finds only the spec-mandated microseconds unit", { skip: hasBinary("promtool") ? false : "promtool is not installed (Debian package prometheus; .ci/run installs it)" }, async () => {
    const base = { provider: "openai", model: "gpt-4o-mini", method: "chat" } as const;
    // Inference traffic does not exist yet; the recording API fills the remaining families so promtool sees them all.
    app.metrics.recordUpstreamRequest(base);
    app.metrics.recordError(base, 429, "policy_rate_limited");
    app.metrics.recordOverhead(base, 150);
    app.metrics.recordRetries(base, 0);
    app.metrics.recordTokens(base, 3, 4);
    app.metrics.recordCost(base, 0.001);
    app.metrics.activeRequestStarted("chat");
    app.metrics.setProviderKeyUp("openai", "k1", "main", true);
    app.metrics.recordKeyRotation({ provider: "openai", requestedModel: "gpt-4o-mini", keyId: "k1", keyName: "main", failReason: "rate_limited" });
    const text = await (await fetch(`${app.url}/metrics`)).text();
    const run = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    const findings = `${run.stdout}\n${run.stderr}`.split("\n").map((l) => l.trim()).filter(Boolean);
    const unexpected = findings.filter((l) => !/^gw_overhead_latency_microseconds use base unit "seconds" instead of "microseconds"$/.test(l));
    assert.deepEqual(unexpected, []);
    assert.equal(findings.length, 1, findings.join("\n"));
  });
});

describe("custom labels and dimension headers", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({ client: { ...DEFAULT_CLIENT, prometheusLabels: ["team"] } });
  });
  after(async () => {
    await app.stop();
  });

  test("x-gw-dim-team and legacy x-gw-prom-team values label the request, and dim wins", async () => {
    await fetch(`${app.url}/health`, { headers: { "x-gw-dim-team": "dim-a" } });
    await fetch(`${app.url}/health`, { headers: { "x-gw-prom-team": "prom-b" } });
    await fetch(`${app.url}/health`, { headers: { "x-gw-prom-team": "loser", "x-gw-dim-team": "winner" } });
    const samples = await scrapeUntil(app, (s) => total(s, "http_requests_total", { path: "/health", team: "winner" }) === 1);
    assert.equal(total(samples, "http_requests_total", { path: "/health", team: "dim-a" }), 1);
    assert.equal(total(samples, "http_requests_total", { path: "/health", team: "prom-b" }), 1);
    assert.equal(total(samples, "http_requests_total", { path: "/health", team: "winner" }), 1);
    assert.equal(total(samples, "http_requests_total", { path: "/health", team: "loser" }), 0);
  });

  test("a dim header named like a reserved label is a 400 naming the header", async () => {
    const res = await api(app, "GET", "/api/mcp/clients", undefined, { "x-gw-dim-method": "x" });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "invalid_argument");
    assert.match(res.body.error.message, /x-gw-dim-method/);
  });

  /** The dimensions of the access line whose `team` dimension is `team`, once it is written (bounded: 2 s). */
  async function requestLineDims(team: string): Promise<Record<string, string> | undefined> {
    for (let i = 0; i < 100; i++) {
      const line = app.logLines.map((l) => JSON.parse(l) as { msg?: string; dims?: Record<string, string> }).find((l) => l.msg === "request" && l.dims?.["team"] === team);
      if (line) return line.dims;
      await new Promise((r) => setTimeout(r, 20));
    }
    return undefined;
  }

  test("dimension values go to the request's log line", async () => {
    await fetch(`${app.url}/api/mcp/clients`, { headers: { "x-gw-dim-team": "logged", "x-gw-dim-env": "prod" } });
    assert.deepEqual(await requestLineDims("logged"), { team: "logged", env: "prod" });
  });

  test("a dimension named like a censored field is redacted in the request's log line", async () => {
    await fetch(`${app.url}/api/mcp/clients`, { headers: { "x-gw-dim-value": "a-secret", "x-gw-dim-team": "censored" } });
    assert.deepEqual(await requestLineDims("censored"), { value: "[redacted]", team: "censored" });
  });

  test("PATCH /config prometheus_labels adds a label at run time and restarts the counters", async () => {
    const res = await api(app, "PATCH", "/config", { client: { prometheus_labels: ["team", "env"] } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await fetch(`${app.url}/health`, { headers: { "x-gw-dim-team": "t1", "x-gw-dim-env": "staging" } });
    const samples = await scrapeUntil(app, (s) => total(s, "http_requests_total", { path: "/health", env: "staging" }) === 1);
    assert.equal(total(samples, "http_requests_total", { path: "/health", team: "t1", env: "staging" }), 1);
    assert.equal(total(samples, "http_requests_total", { path: "/health", team: "dim-a" }), 0);
  });
});

describe("/metrics with auth_config enabled", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({ auth: ADMIN });
  });
  after(async () => {
    await app.stop();
  });

  test("refuses a scrape without credentials with 401 and a Basic challenge", async () => {
    const res = await fetch(`${app.url}/metrics`);
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /^Basic /);
  });

  test("refuses a scrape with a wrong password", async () => {
    const res = await fetch(`${app.url}/metrics`, { headers: { authorization: `Basic ${Buffer.from("admin:nope").toString("base64")}` } });
    assert.equal(res.status, 401);
  });

  test("serves the exposition text with the admin credentials", async () => {
    const res = await fetch(`${app.url}/metrics`, { headers: { authorization: BASIC } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    assert.match(await res.text(), /# TYPE http_requests_total counter/);
  });

  test(
    "a real Prometheus server scrapes the gateway with basic auth and reports the target up",
    { skip: hasBinary("prometheus") ? false : "prometheus is not installed (Debian package prometheus; .ci/run installs it)" },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "gw-prom-"));
      const port = await freePort();
      const target = new URL(app.url).host;
      const config = [
        "global:",
        "  scrape_interval: 1s",
        "  scrape_timeout: 1s",
        "scrape_configs:",
        "  - job_name: gw",
        "    basic_auth:",
        `      username: ${ADMIN.username}`,
        `      password: ${ADMIN.password}`,
        "    static_configs:",
        `      - targets: ["${target}"]`,
        "",
      ].join("\n");
      await writeFile(join(dir, "prometheus.yml"), config);
      const child = spawn(
        "prometheus",
        [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString("utf8")).slice(-4000)));
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      try {
        type Target = { health: string; lastError: string; labels: Record<string, string> };
        let targets: Target[] = [];
        for (let i = 0; i < 150; i++) {
          try {
            const res = await fetch(`http://127.0.0.1:${port}/api/v1/targets`);
            if (res.ok) {
              targets = ((await res.json()) as { data: { activeTargets: Target[] } }).data.activeTargets;
              if (targets.some((t) => t.health === "up")) break;
            }
          } catch {
            // Not listening yet.
          }
          if (child.exitCode !== null) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        const gw = targets.find((t) => t.labels["job"] === "gw");
        assert.ok(gw, `prometheus lists the gw target; stderr tail:\n${stderr}`);
        assert.equal(gw.health, "up", `lastError: ${gw.lastError}`);
      } finally {
        child.kill("SIGTERM");
        await exited;
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
