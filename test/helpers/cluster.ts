/**
 * Several gateway processes on one PostgreSQL schema, for the tests of a cluster: the server's address,
 * whether it answers, and polling with a generous deadline.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
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
