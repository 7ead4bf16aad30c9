/** Looks at live processes through /proc (Linux), to prove no child outlives the gateway. */
import { readdir, readFile } from "node:fs/promises";

/** Pids of live processes whose command line contains `marker`, with their parent pids. */
async function processesWith(marker: string): Promise<{ pid: number; ppid: number }[]> {
  const found: { pid: number; ppid: number }[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, "utf8")).replaceAll("\0", " ");
      if (!cmdline.includes(marker)) continue;
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      found.push({ pid: Number(entry), ppid });
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Pids of live children of this process whose command line contains `marker`. */
export async function childrenMatching(marker: string): Promise<number[]> {
  return (await processesWith(marker)).filter((p) => p.ppid === process.pid).map((p) => p.pid);
}

/** Pids of every live process, whoever its parent, whose command line contains `marker`. */
export async function processesMatching(marker: string): Promise<number[]> {
  return (await processesWith(marker)).map((p) => p.pid);
}
