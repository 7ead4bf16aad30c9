/**
 * Runs the official MCP conformance suite (auth scenarios) against the gateway as an OAuth client: starts
 * one gateway (embedded database, port 0), then the suite with the adapter as the client under test and
 * the expected-failures baseline next to this file. The suite needs Node >= 22, which `node@22` brings.
 * Extra arguments go to the suite (e.g. `--scenario auth/metadata-default`).
 */
import { spawn } from "node:child_process";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { startApp } from "../helpers/app.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");

const app = await startApp();
const adapter = `node --import tsx ${relative(root, join(here, "adapter.ts"))}`;
const extra = process.argv.slice(2);
const args = [
  "-y", "-p", "node@22", "-p", "@modelcontextprotocol/conformance@0.1.16",
  "conformance", "client", ...(extra.includes("--scenario") ? [] : ["--suite", "auth"]), "--command", adapter,
  "--expected-failures", relative(root, join(here, "expected-failures.yml")),
  // The scenarios run in parallel, each starting a Node process with tsx: give a loaded machine time.
  "--timeout", "120000",
  ...extra,
];
const code = await new Promise<number>((resolve) => {
  const child = spawn("npx", args, { cwd: root, stdio: "inherit", env: { ...process.env, GW_CONFORMANCE_GATEWAY: app.url } });
  child.on("close", (status) => resolve(status ?? 1));
});
await app.stop();
process.exit(code);
