/**
 * Reading a `.cpuprofile` that `BENCH_PROFILE=1` wrote: the busy samples of its measured part (from a
 * fraction of its length on, where the throughput phase runs), each as the stack it stopped in. A frame in
 * an esbuild bundle gets its module's path as its URL (`node_modules/undici/...`), as it would unbundled.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { moduleLocator, type ModuleLocator } from "./bundle-modules.js";

/** One call-tree node of a V8 CPU profile. */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The stack of every non-idle sample from `startFraction` of the profile up to `endFraction`, innermost frame first. */
export function* busyStacks(file: string, startFraction: number, endFraction = 1): Generator<ProfileNode[]> {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const from = profile.startTime + (profile.endTime - profile.startTime) * startFraction;
  const to = profile.startTime + (profile.endTime - profile.startTime) * endFraction;
  const locators = new Map<string, ModuleLocator>();
  for (const node of profile.nodes) {
    const url = node.callFrame.url;
    if (!url.startsWith("file://") || !url.endsWith(".js")) continue;
    let locate = locators.get(url);
    if (locate === undefined) {
      locate = moduleLocator(fileURLToPath(url));
      locators.set(url, locate);
    }
    const module = locate(node.callFrame.lineNumber, node.callFrame.columnNumber);
    if (module !== "") node.callFrame.url = module;
  }
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  let at = profile.startTime;
  for (const [i, id] of profile.samples.entries()) {
    at += profile.timeDeltas[i] ?? 0;
    const leaf = byId.get(id);
    if (at < from || at > to || leaf === undefined || leaf.callFrame.functionName === "(idle)") continue;
    const stack: ProfileNode[] = [];
    for (let node: ProfileNode | undefined = leaf; node !== undefined; node = byId.get(parent.get(node.id) ?? -1)) stack.push(node);
    yield stack;
  }
}
