/**
 * The conformance-shaped MCP server (test/fixtures/conformance-upstream.ts) over streamable HTTP in a process of
 * its own, and the wait for a gateway's client of it to be healthy: what the MCP benches share.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

const FIXTURE = new URL("../test/fixtures/conformance-upstream.ts", import.meta.url).pathname;

/** The server's process and the URL it serves MCP on. */
export interface McpUpstream {
  process: ChildProcess;
  url: string;
}

/** Starts the server and waits for the URL it prints; kills it when it cannot. */
export async function startMcpUpstream(): Promise<McpUpstream> {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, "--transport", "http"], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    return { process: child, url: await firstJson(child, "url") };
  } catch (err) {
    child.kill();
    throw err;
  }
}

/** The first stdout line of `child` that parses as JSON with the string `field`, or a failure when it exits first. */
function firstJson(child: ChildProcess, field: string): Promise<string> {
  return new Promise((resolve, reject) => {
    if (child.stdout === null) return reject(new Error("no stdout"));
    createInterface({ input: child.stdout }).on("line", (line) => {
      try {
        const value = (JSON.parse(line) as Record<string, unknown>)[field];
        if (typeof value === "string") resolve(value);
      } catch {
        // A log line that is not JSON.
      }
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code} before printing ${field}`)));
  });
}

/** Waits until the gateway at `gatewayUrl` reports its MCP client `name` healthy. */
export async function waitClientHealthy(gatewayUrl: string, name: string): Promise<void> {
  // Bounded: 1200 polls of 100 ms.
  for (let i = 0; i < 1200; i++) {
    const res = await fetch(`${gatewayUrl}/api/mcp/clients`).catch(() => undefined);
    const body = res?.ok ? ((await res.json()) as { clients?: { name: string; state: string }[] }) : undefined;
    if (body?.clients?.some((c) => c.name === name && c.state === "healthy")) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the gateway's MCP client ${name} never became healthy`);
}
