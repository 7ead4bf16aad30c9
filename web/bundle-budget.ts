/** The dashboard's size budget: the JavaScript a first visit downloads, measured on the built files. */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

/** Initial JavaScript may weigh this much gzipped. */
export const INITIAL_JS_BUDGET_BYTES = 200 * 1024;

/** The scripts index.html loads at once (entry and module preloads), with their gzipped sizes. */
export async function initialJs(webDir: string): Promise<{ files: string[]; gzipBytes: number }> {
  const html = await readFile(join(webDir, "index.html"), "utf8");
  const files = new Set<string>();
  for (const m of html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="\/workspace\/([^"]+\.js)"/g)) {
    if (m[1] !== undefined) files.add(m[1]);
  }
  let gzipBytes = 0;
  for (const file of files) gzipBytes += gzipSync(await readFile(join(webDir, file)), { level: 9 }).length;
  return { files: [...files], gzipBytes };
}
