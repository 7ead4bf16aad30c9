/**
 * Runs the gateway as a real process (as `npm start`, `npm run dev` or systemd would) and reads its log,
 * for the tests of the entry point, signals and the compiled start.
 */
import { spawn, type ChildProcess } from "node:child_process";

/** The repository root, the working directory of every spawned gateway. */
export const ROOT = new URL("../../", import.meta.url).pathname;

/** A spawned gateway process. */
export interface GatewayProcess {
  readonly child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

/** Spawns `command args` in the repository root; GW_DATABASE_URL is cleared unless `env` sets it. */
export function spawnGateway(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): GatewayProcess {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, GW_DATABASE_URL: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout?.on("data", (c: Buffer) => (text += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (text += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => text, exited };
}

/** Spawns `node --import tsx src/main.ts args`, what `npm run dev` runs. */
export function spawnMain(args: readonly string[], env: NodeJS.ProcessEnv = {}): GatewayProcess {
  return spawnGateway(process.execPath, ["--import", "tsx", "src/main.ts", ...args], env);
}

/**
 * Waits (bounded: 1800 polls of 100 ms, room for a start on a machine busy with other suites) for the log line whose JSON `msg` starts with `message`, counting
 * only lines after the first `after` ones, and returns it parsed; throws with the output when the process
 * ends first.
 */
export async function waitForLog(gw: GatewayProcess, message: string, after = 0): Promise<Record<string, unknown>> {
  const prefix = `"msg":${JSON.stringify(message).slice(0, -1)}`;
  let done = false;
  void gw.exited.then(() => (done = true));
  for (let i = 0; i < 1800; i++) {
    for (const line of gw.output().split("\n").slice(after)) {
      if (line.includes(prefix)) return JSON.parse(line) as Record<string, unknown>;
    }
    if (done) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway did not log "${message}":\n${gw.output()}`);
}

/** The URL the gateway logged once it serves everything. */
export async function servingUrl(gw: GatewayProcess): Promise<string> {
  return String((await waitForLog(gw, "gateway listening"))["url"]);
}

/** The number of log lines written so far (a starting point for waitForLog). */
export function logLineCount(gw: GatewayProcess): number {
  return gw.output().split("\n").length - 1;
}
