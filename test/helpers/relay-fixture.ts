/**
 * What the tests of the relayed MCP endpoints (/mcp/<name> and the aggregated /mcp) set up alike: the
 * relay test server over http and over stdio and the conformance-shaped server, registered as the clients
 * `up`, `up_stdio` and `conf`; and the SDK clients a test opens, closed after each test.
 */
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpClientSpec } from "../../src/mcp/client-spec.js";
import { serveConformance, type ConformanceListener } from "../fixtures/conformance-upstream.js";
import { stdioClient } from "./mcp-specs.js";
import { closeRelay, remoteClient } from "./relay-client.js";
import { startRelayUpstream, type RelayUpstreamListener } from "./relay-upstream.js";

const STDIO_UPSTREAM = fileURLToPath(new URL("./relay-upstream-stdio.ts", import.meta.url));

/** The three upstreams, running. */
export interface RelayUpstreams {
  up: RelayUpstreamListener;
  conf: ConformanceListener;
  /** The clients `up` (callable: `upTools`), `conf` and `up_stdio`, to register with a gateway. */
  specs(upTools?: string[]): McpClientSpec[];
  close(): Promise<void>;
}

/** Starts the relay test server over http and the conformance-shaped server (the stdio one starts with the gateway). */
export async function startRelayUpstreams(): Promise<RelayUpstreams> {
  const [up, conf] = await Promise.all([startRelayUpstream(), serveConformance("http")]);
  return {
    up,
    conf,
    specs: (upTools = ["*"]) => [remoteClient("up", "http", up.httpUrl, upTools), remoteClient("conf", "http", conf.url, ["*"]), stdioClient("up_stdio", process.execPath, ["--import", "tsx", STDIO_UPSTREAM])],
    close: async () => {
      await Promise.all([up.close(), conf.close()]);
    },
  };
}

/** The clients a test opened, each closed (its session ended) after the test. */
export class OpenClients {
  private clients: Client[] = [];

  /** Keeps `client` to close after the test; returns it. */
  track(client: Client): Client {
    this.clients.push(client);
    return client;
  }

  async closeAll(): Promise<void> {
    const clients = this.clients;
    this.clients = [];
    await Promise.all(clients.map((client) => closeRelay(client).catch(() => undefined)));
  }
}

/** The text of the first content of a resources/read answer. */
export function firstText(read: { contents: readonly object[] }): string | undefined {
  return (read.contents[0] as { text?: string } | undefined)?.text;
}
