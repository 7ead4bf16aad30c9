/**
 * Clients in other languages, generated the way docs/protocols.md ("Go and Python clients") says: buf with
 * the templates in test/clients/ and Debian's packaged protoc plugins, into a temporary directory. A Go and a
 * Python program (test/clients/) then call a real gateway over gRPC on plaintext HTTP/2: a list, an update
 * with a field mask, a tool execution against a mock MCP server, and three refused calls; each prints JSON
 * that the tests assert on. Go builds in GOPATH mode from Debian's Go sources, so nothing is downloaded.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Code } from "@connectrpc/connect";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** Where Debian's golang-*-dev packages put their sources: the second GOPATH entry. */
const GOCODE = "/usr/share/gocode";
/** Debian's interpreter: the python3-* packages install for it, not for another python3 earlier on PATH. */
const PYTHON = "/usr/bin/python3";
const PYTHON_PACKAGES = "/usr/lib/python3/dist-packages";

function onPath(command: string): boolean {
  return (process.env["PATH"] ?? "").split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The Debian packages of `needs` whose file is missing. */
function missing(needs: [pkg: string, present: boolean][]): string[] {
  return needs.filter(([, present]) => !present).map(([pkg]) => pkg);
}

const missingGo = missing([
  ["golang-go", onPath("go")],
  ["protoc-gen-go", onPath("protoc-gen-go")],
  ["protoc-gen-go-grpc", onPath("protoc-gen-go-grpc")],
  ["golang-google-grpc-dev", existsSync(`${GOCODE}/src/google.golang.org/grpc`)],
  ["golang-google-protobuf-dev", existsSync(`${GOCODE}/src/google.golang.org/protobuf`)],
  // grpc-go's codec goes through github.com/golang/protobuf: 1.3 (golang-github-golang-protobuf-1-3-dev, which
  // golang-google-grpc-dev also accepts) panics on protoc-gen-go 1.28's messages; 1.4 and later wrap them.
  ["golang-github-golang-protobuf-1-5-dev", existsSync(`${GOCODE}/src/github.com/golang/protobuf/proto/registry.go`)],
  ["golang-google-genproto-dev", existsSync(`${GOCODE}/src/google.golang.org/genproto/googleapis/api/annotations`)],
]);
const missingPython = missing([
  ["protobuf-compiler", onPath("protoc")],
  ["protobuf-compiler-grpc", onPath("grpc_python_plugin")],
  ["python3-grpcio", existsSync(`${PYTHON_PACKAGES}/grpc`)],
  ["python3-protobuf", existsSync(`${PYTHON_PACKAGES}/google/protobuf`)],
]);

function notInstalled(packages: string[]): string {
  return `not installed: Debian packages ${packages.join(" ")} (apt-get install --no-install-recommends ${packages.join(" ")}; .ci/run installs them)`;
}

/** A `skip` option: the reason when packages are missing, except under CI, which installs them: there the test fails. */
function skipWithout(packages: string[]): string | false {
  return packages.length === 0 || process.env["CI"] === "true" ? false : notInstalled(packages);
}

/** Under CI, fails a test whose packages are missing with their names rather than with a tool's error. */
function requirePackages(packages: string[]): void {
  if (packages.length > 0) assert.fail(notInstalled(packages));
}

/** Runs a command to completion; rejects with its output when it fails. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: root, env, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(" ")} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** `buf generate` of proto/gw (and `extraPaths`) with one of test/clients' templates into `out`. */
async function generate(template: string, out: string, extraPaths: string[] = []): Promise<void> {
  const paths = ["proto/gw", ...extraPaths].flatMap((path) => ["--path", path]);
  await run("npx", ["--no-install", "buf", "generate", "--template", `test/clients/${template}`, ...paths, "-o", out]);
}

interface RpcError {
  code: number;
  message: string;
}

/** What test/clients' programs print. */
interface ClientReport {
  list: { names: string[] };
  update: { base_url: string; default_request_timeout_in_seconds: number; stream_idle_timeout_in_seconds: number; keys: number };
  tool: { role: string; tool_call_id: string; content: string };
  not_found: RpcError | null;
  invalid_argument: RpcError | null;
  unauthenticated: RpcError | null;
}

describe("clients generated for Go and Python call the gateway over gRPC", () => {
  let upstream: MockUpstream;
  let fixture: McpFixture;
  let app: TestApp;
  let adminToken = "";
  const virtualKey = "sk-gw-clients";

  before(async () => {
    upstream = await startMockOpenAi();
    fixture = await startMcpFixture();
    app = await startApp({
      auth: { enabled: true, username: "admin", password: "clients-pw", sessionTtlMs: 3_600_000 },
      inference: inferenceOptionsFromFile({}, [
        { id: "vk-clients", name: "clients", value: virtualKey, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo"] }] },
      ]),
    });
    const login = await api(app, "POST", "/api/session/login", { username: "admin", password: "clients-pw" });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    adminToken = login.body.token as string;
    const provider = await asAdmin("POST", "/api/v1/providers", {
      name: "openai",
      keys: [{ id: "k1", name: "main", value: "sk-upstream-1", models: ["gpt-4o-mini"] }],
      network_config: { base_url: upstream.url, stream_idle_timeout_in_seconds: 90 },
    });
    assert.equal(provider.status, 200, JSON.stringify(provider.body));
    const client = await asAdmin("POST", "/api/mcp/client", { name: "docs", connection_type: "http", connection_string: fixture.httpUrl, tools_to_execute: ["*"] });
    assert.equal(client.status, 200, JSON.stringify(client.body));
  });

  after(async () => {
    await app?.stop();
    await fixture?.close();
    await upstream?.close();
  });

  function asAdmin(method: string, path: string, body?: unknown) {
    return api(app, method, path, body, { authorization: `Bearer ${adminToken}` });
  }

  /** The environment test/clients' programs read. */
  function clientEnv(timeoutSeconds: number, text: string): NodeJS.ProcessEnv {
    return {
      GW_ADDRESS: new URL(app.url).host,
      GW_ADMIN_TOKEN: adminToken,
      GW_VIRTUAL_KEY: virtualKey,
      GW_TIMEOUT_SECONDS: String(timeoutSeconds),
      GW_TOOL: "docs-echo",
      GW_TOOL_TEXT: text,
    };
  }

  /** Asserts on one program's report and on the gateway's state after it. */
  async function check(report: ClientReport, expected: { timeoutSeconds: number; text: string; callId: string; echoCallsBefore: number }) {
    assert.deepEqual(report.list, { names: ["openai"] });
    assert.deepEqual(report.update, { base_url: upstream.url, default_request_timeout_in_seconds: expected.timeoutSeconds, stream_idle_timeout_in_seconds: 90, keys: 1 }, "the mask changed one field and kept the rest");
    assert.deepEqual(report.tool, { role: "tool", tool_call_id: expected.callId, content: expected.text });
    assert.equal(fixture.callCount("echo"), expected.echoCallsBefore + 1, "the MCP server ran the tool once");

    assert.equal(report.not_found?.code, Code.NotFound, JSON.stringify(report.not_found));
    assert.match(report.not_found?.message ?? "", /no-such-provider/);
    assert.equal(report.invalid_argument?.code, Code.InvalidArgument, JSON.stringify(report.invalid_argument));
    assert.match(report.invalid_argument?.message ?? "", /update_mask: "network_config\.base_uri" is not a field of network_config/);
    assert.equal(report.unauthenticated?.code, Code.Unauthenticated, JSON.stringify(report.unauthenticated));

    const stored = await asAdmin("GET", "/api/v1/providers/openai");
    assert.equal(stored.body.provider.network_config.default_request_timeout_in_seconds, expected.timeoutSeconds);
    const chat = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
    assert.equal(chat.status, 200, `the provider still reaches its upstream: ${JSON.stringify(chat.body)}`);
    assert.equal(upstream.last().headers["authorization"], "Bearer sk-upstream-1");
  }

  test("Go: protoc-gen-go and protoc-gen-go-grpc, built in GOPATH mode", { skip: skipWithout(missingGo) }, async () => {
    requirePackages(missingGo);
    const tmp = await mkdtemp(join(tmpdir(), "gw-go-client-"));
    try {
      // go_package gw/gen/go/gw/<area>/v1 resolves to GOPATH/src/gw/gen/go/gw/<area>/v1.
      await generate("buf.gen.go.yaml", join(tmp, "src", "gw"));
      const binary = join(tmp, "client");
      const goEnv = { ...process.env, GO111MODULE: "off", GOPATH: `${tmp}${delimiter}${GOCODE}`, GOPROXY: "off", GOFLAGS: "", GOTOOLCHAIN: "local" };
      await run("go", ["build", "-o", binary, "./test/clients/go/main.go"], goEnv);
      const echoCallsBefore = fixture.callCount("echo");
      const stdout = await run(binary, [], { ...process.env, ...clientEnv(17, "hello from go") });
      await check(JSON.parse(stdout) as ClientReport, { timeoutSeconds: 17, text: "hello from go", callId: "call_go", echoCallsBefore });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });

  test("Python: protoc's python and pyi, grpc_python_plugin", { skip: skipWithout(missingPython) }, async () => {
    requirePackages(missingPython);
    const tmp = await mkdtemp(join(tmpdir(), "gw-python-client-"));
    try {
      // Debian packages no googleapis-common-protos, so google.api comes from the vendored protos.
      await generate("buf.gen.python.yaml", tmp, ["third_party/google/api"]);
      const echoCallsBefore = fixture.callCount("echo");
      const env = { ...process.env, ...clientEnv(23, "hello from python"), PYTHONPATH: join(tmp, "gen", "python"), PYTHONNOUSERSITE: "1" };
      const stdout = await run(PYTHON, ["test/clients/python/client.py"], env);
      await check(JSON.parse(stdout) as ClientReport, { timeoutSeconds: 23, text: "hello from python", callId: "call_python", echoCallsBefore });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
