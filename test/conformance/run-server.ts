/**
 * Runs the official MCP conformance server suite (every active scenario) against the conformance-shaped
 * upstream fixture, started here over streamable HTTP on 127.0.0.1 port 0, and exits with the suite's status.
 *
 *   node --import tsx test/conformance/run-server.ts [--url <url>] [--expected-failures <file>] [suite options]
 *
 * `--url` runs the suite against that endpoint instead of starting the fixture. `--through-gateway
 * http|sse|stdio` starts the fixture over that transport, registers it with a gateway (embedded database,
 * port 0) as the MCP client `conformance`, and runs the suite against the gateway's `/mcp/conformance`: every
 * scenario passes there as it does direct. With `--aggregated` as well, the suite runs against the gateway's
 * `/mcp` instead, where names are prefixed `conformance-`: the scenarios that call a tool or prompt by its own
 * name fail there by design, and are listed in aggregated-expected-failures.yml (the suite fails the run when
 * one of them passes, or anything else fails). `--expected-failures` and any other arguments (`--scenario ping`,
 * `--suite all`, `--verbose`) go to the suite unchanged. The suite needs Node >= 22, which `node@22` brings.
 */
import { spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serveConformance, type ConformanceListener } from "../fixtures/conformance-upstream.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { stdioClient } from "../helpers/mcp-specs.js";
import { remoteClient, waitHealthy } from "../helpers/relay-client.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/**
 * The server command takes no --timeout of its own (each scenario bounds its own waits), so the whole run is
 * bounded here instead, generously: npx may first have to fetch node@22 and the suite.
 */
const RUN_LIMIT_MS = 15 * 60_000;

/** Takes `--name value` out of `args`, returning the value. */
function takeOption(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const value = args[at + 1];
  if (value === undefined || value.startsWith("--")) throw new Error(`${name} needs a value`);
  args.splice(at, 2);
  return value;
}

const rest = process.argv.slice(2);
const givenUrl = takeOption(rest, "--url");
const expectedFailures = takeOption(rest, "--expected-failures");
const through = takeOption(rest, "--through-gateway");
const aggregatedAt = rest.indexOf("--aggregated");
const aggregated = aggregatedAt >= 0;
if (aggregated) rest.splice(aggregatedAt, 1);
if (aggregated && through === undefined) throw new Error("--aggregated needs --through-gateway");
if (through !== undefined && through !== "http" && through !== "sse" && through !== "stdio") throw new Error("--through-gateway takes http, sse or stdio");

const FIXTURE = join(root, "test", "fixtures", "conformance-upstream.ts");
let fixture: ConformanceListener | undefined;
let gateway: TestApp | undefined;
if (givenUrl === undefined && through !== "stdio") fixture = await serveConformance(through === "sse" ? "sse" : "http", 0);
if (through !== undefined) {
  const client =
    through === "stdio"
      ? stdioClient("conformance", process.execPath, ["--import", "tsx", FIXTURE, "--transport", "stdio"])
      : remoteClient("conformance", through, fixture?.url ?? "", ["*"]);
  gateway = await startApp({ mcpClients: [client] });
  await waitHealthy(gateway, ["conformance"]);
}
const url = givenUrl ?? (gateway !== undefined ? `${gateway.url}/mcp${aggregated ? "" : "/conformance"}` : (fixture?.url ?? ""));
const failures = expectedFailures ?? (aggregated ? join(root, "test", "conformance", "aggregated-expected-failures.yml") : undefined);

const args = [
  "-y", "-p", "node@22", "-p", "@modelcontextprotocol/conformance@0.1.16",
  "conformance", "server", "--url", url,
  ...(failures === undefined ? [] : ["--expected-failures", resolve(failures)]),
  ...rest,
];
console.log(`conformance server suite against ${url}`);
const code = await new Promise<number>((done) => {
  // Its own process group, so that the limit below can end npx and the suite it started together.
  const child = spawn("npx", args, { cwd: root, stdio: "inherit", detached: true });
  const stopSuite = () => {
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
  };
  const limit = setTimeout(() => {
    console.error(`the suite did not finish within ${RUN_LIMIT_MS / 60_000} minutes; stopping it`);
    stopSuite();
  }, RUN_LIMIT_MS);
  // A terminal's Ctrl-C reaches only the foreground group, which the suite has left: pass it on.
  process.once("SIGINT", stopSuite);
  process.once("SIGTERM", stopSuite);
  child.on("close", (status) => {
    clearTimeout(limit);
    done(status ?? 1);
  });
});
await gateway?.stop();
await fixture?.close();
process.exit(code);
