/**
 * Several gateway processes on one PostgreSQL schema, for the tests of a cluster: the server's address,
 * whether it answers, polling with a generous deadline or within a documented bound, and a configuration
 * change the other nodes take long to apply.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dropSchema, randomSchemaName } from "../../src/store/index.js";
import { servingUrl, spawnMain, type GatewayProcess } from "./gateway-process.js";
import { SKIP_IN_REPEATED_RUN } from "./repeated-run.js";

/** The PostgreSQL server the cluster tests run on. */
export const CLUSTER_DATABASE_URL = process.env["GW_TEST_DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test";

/**
 * Null when the server answers, else why the cluster tests are skipped. They always run on a PostgreSQL
 * server, so the suite's second run, on that server, skips them: they ran in the first.
 */
export async function clusterSkipReason(): Promise<string | null> {
  if (SKIP_IN_REPEATED_RUN !== false) return "they run on a PostgreSQL server in both runs: ran in the first (GW_TEST_SKIP_REPEATED=1)";
  try {
    // Dropping a schema nobody uses is a harmless round trip that proves the server answers.
    await dropSchema(CLUSTER_DATABASE_URL, randomSchemaName());
    return null;
  } catch (err) {
    return `skipped: no PostgreSQL server answers at ${CLUSTER_DATABASE_URL} (set GW_TEST_DATABASE_URL): ${(err as Error).message}`;
  }
}

/** One gateway process of a test cluster. */
export interface ClusterNode {
  readonly gw: GatewayProcess;
  readonly url: string;
}

/** What every node of one test cluster shares: the schema, the encryption key and the config file. */
export interface ClusterPlace {
  readonly schema: string;
  readonly encryptionKey: string;
  readonly configPath: string;
}

/** A fresh schema and key for a test cluster, and a config file holding `config`. */
export async function newClusterPlace(config: Record<string, unknown>): Promise<ClusterPlace> {
  const dir = await mkdtemp(join(tmpdir(), "gw-cluster-"));
  const configPath = join(dir, "gw.json");
  await writeFile(configPath, JSON.stringify(config));
  return { schema: randomSchemaName(), encryptionKey: randomBytes(32).toString("base64"), configPath };
}

/** Spawns a node on the place (its own data directory, `port` or else any free one) without waiting for it. */
export async function spawnNode(place: ClusterPlace, env: NodeJS.ProcessEnv = {}, port = 0): Promise<GatewayProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), "gw-cluster-node-"));
  return spawnMain(["--port", String(port), "--data-dir", dataDir, "--config", place.configPath], {
    GW_DATABASE_URL: CLUSTER_DATABASE_URL,
    GW_DATABASE_SCHEMA: place.schema,
    GW_ENCRYPTION_KEY: place.encryptionKey,
    ...env,
  });
}

/** Starts `count` nodes together (node i with `envOf(i)` added) and waits until each serves. */
export async function startNodes(place: ClusterPlace, count: number, envOf: (i: number) => NodeJS.ProcessEnv = () => ({})): Promise<ClusterNode[]> {
  const procs = await Promise.all(Array.from({ length: count }, (_, i) => spawnNode(place, envOf(i))));
  return Promise.all(procs.map(async (gw) => ({ gw, url: await servingUrl(gw) })));
}

/** Stops the nodes still running and drops the schema. */
export async function stopCluster(place: ClusterPlace, nodes: readonly ClusterNode[]): Promise<void> {
  await Promise.all(
    nodes.map(async (node) => {
      if (node.gw.child.exitCode !== null || node.gw.child.signalCode !== null) return;
      node.gw.child.kill("SIGTERM");
      await node.gw.exited;
    }),
  );
  await dropSchema(CLUSTER_DATABASE_URL, place.schema);
}

/** Polls `probe` every 100 ms until it returns a value other than undefined; throws `what` after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

/**
 * Probes until `probe` answers true, as soon as it does; fails when a probe that started `boundMs` or more
 * after `since` still answered false, since by then the documented bound has passed.
 */
export async function inEffectWithin(what: string, since: number, boundMs: number, probe: () => Promise<boolean>): Promise<void> {
  for (;;) {
    const startedAt = Date.now();
    if (await probe()) return;
    if (startedAt - since >= boundMs) throw new Error(`${what} was not in effect ${startedAt - since} ms later (bound: ${boundMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A configuration change the nodes are busy applying until `release` is called. */
export interface SlowChange {
  /** Lets the change finish and removes what it created. */
  release(): Promise<void>;
}

/**
 * Creates an HTTP MCP client through `creator` whose server holds every request until released, and
 * resolves once all `nodeCount` nodes are connecting to it: the other nodes are then in the middle of
 * applying that configuration change. `headers` go with the admin API calls (a session when auth is on).
 */
export async function startSlowChange(creator: ClusterNode, nodeCount: number, headers: Record<string, string> = {}): Promise<SlowChange> {
  const held: ServerResponse[] = [];
  let open = false;
  const refuse = (res: ServerResponse) => res.writeHead(503, { "content-type": "text/plain" }).end("not now");
  const server = createServer((req, res) => {
    req.resume();
    if (open) refuse(res);
    else held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const created = fetch(`${creator.url}/api/mcp/client`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ name: `slow_${randomBytes(4).toString("hex")}`, connection_type: "http", connection_string: url }),
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as { client_id?: string } }));
  let answered: { status: number; body: unknown } | undefined;
  void created.then(
    (res) => (answered = res),
    (err: unknown) => (answered = { status: 0, body: String(err) }),
  );
  const deadline = Date.now() + 30_000;
  while (held.length < nodeCount) {
    const failure = answered !== undefined ? `creating the slow MCP client answered ${answered.status} at once: ${JSON.stringify(answered.body)}` : Date.now() > deadline ? `only ${held.length} of ${nodeCount} nodes connected to the slow MCP server` : null;
    if (failure !== null) {
      held.splice(0).forEach(refuse);
      server.close();
      throw new Error(failure);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    async release() {
      open = true;
      held.splice(0).forEach(refuse);
      const res = await created;
      if (res.status !== 200 || res.body.client_id === undefined) throw new Error(`creating the slow MCP client answered ${res.status}: ${JSON.stringify(res.body)}`);
      const deleted = await fetch(`${creator.url}/api/mcp/client/${res.body.client_id}`, { method: "DELETE", headers });
      await deleted.text();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
