/** The conformance-shaped upstream fixture, run as a script over each transport and driven by the SDK's client. */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { closeMcp, resultText, toolNames } from "../helpers/mcp-client.js";

const FIXTURE = fileURLToPath(new URL("../fixtures/conformance-upstream.ts", import.meta.url));
/** Generous, as each fixture is a fresh Node process compiling TypeScript on a possibly busy machine. */
const START_TIMEOUT_MS = 60_000;

interface Listening {
  child: ChildProcess;
  url: string;
}

/** Starts the fixture over http or sse on port 0 and reads the URL from its first stdout line. */
async function listen(transport: "http" | "sse"): Promise<Listening> {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, "--transport", transport, "--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const exited = once(child, "exit").then(([code]) => {
    throw new Error(`fixture exited with ${String(code)} before printing its URL`);
  });
  // Once the URL is read, the child's later exit (on SIGTERM) is expected, not a failure.
  exited.catch(() => undefined);
  const first = once(lines, "line").then(([line]) => line as string);
  const line = await Promise.race([first, exited]);
  lines.close();
  const { url } = JSON.parse(line) as { url: string };
  return { child, url };
}

/** Stops a fixture with SIGTERM and gives its exit code. */
async function terminate(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const [code] = (await exited) as [number | null];
  return code;
}

function stdioTransport(): StdioClientTransport {
  return new StdioClientTransport({ command: process.execPath, args: ["--import", "tsx", FIXTURE, "--transport", "stdio"], stderr: "ignore" });
}

const KINDS = ["http", "sse", "stdio"] as const;

for (const kind of KINDS) {
  describe(`the conformance upstream over ${kind}`, { timeout: START_TIMEOUT_MS * 2 }, () => {
    let fixture: Listening | undefined;
    let client: Client;

    before(async () => {
      let transport: Transport;
      if (kind === "stdio") transport = stdioTransport();
      else {
        fixture = await listen(kind);
        transport = kind === "http" ? new StreamableHTTPClientTransport(new URL(fixture.url)) : new SSEClientTransport(new URL(fixture.url));
      }
      client = new Client({ name: "conformance-upstream-test", version: "1.0.0" });
      await client.connect(transport);
    });
    after(async () => {
      await closeMcp(client);
      if (fixture) await terminate(fixture.child);
    });

    test("lists the tools the conformance scenarios call", async () => {
      const names = await toolNames(client);
      for (const name of ["test_simple_text", "test_image_content", "test_tool_with_progress", "test_sampling", "test_elicitation", "json_schema_2020_12_tool"]) {
        assert.ok(names.includes(name), `${name} missing from ${names.join(", ")}`);
      }
    });

    test("lists the prompts the conformance scenarios get", async () => {
      const names = (await client.listPrompts()).prompts.map((p) => p.name).sort();
      assert.deepEqual(names, ["test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"]);
    });

    test("lists the static resources and the data template", async () => {
      const uris = (await client.listResources()).resources.map((r) => r.uri).sort();
      assert.deepEqual(uris, ["test://static-binary", "test://static-text", "test://watched-resource"]);
      const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
      assert.deepEqual(templates, ["test://template/{id}/data"]);
    });

    test("calls test_simple_text and gets its text back", async () => {
      const result = await client.callTool({ name: "test_simple_text", arguments: {} });
      assert.equal(resultText(result), "This is a simple text response for testing.");
    });
  });
}

describe("the conformance upstream's process", { timeout: START_TIMEOUT_MS * 2 }, () => {
  test("the http fixture exits with status 0 on SIGTERM", async () => {
    const { child } = await listen("http");
    assert.equal(await terminate(child), 0);
  });

  test("the stdio fixture exits with status 0 when its stdin ends", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, "--transport", "stdio"], { stdio: ["pipe", "ignore", "pipe"] });
    // The fixture writes one line to stderr once it is serving; ending stdin before that would test startup instead.
    await once(createInterface({ input: child.stderr! }), "line");
    const exited = once(child, "exit");
    child.stdin!.end();
    const [code] = (await exited) as [number | null];
    assert.equal(code, 0);
  });
});
