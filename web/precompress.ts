/**
 * After `vite build`: writes a .gz and a .br beside every text asset of dist/web (the gateway serves them
 * to browsers that accept them) and prints the initial JavaScript against its budget.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { INITIAL_JS_BUDGET_BYTES, initialJs } from "./bundle-budget.js";

const WEB_DIR = new URL("../dist/web", import.meta.url).pathname;
const COMPRESSIBLE = /\.(js|css|html|svg|json|txt|map)$/;

for (const entry of await readdir(WEB_DIR, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !COMPRESSIBLE.test(entry.name)) continue;
  const path = join(entry.parentPath, entry.name);
  const body = await readFile(path);
  await writeFile(`${path}.gz`, gzipSync(body, { level: 9 }));
  await writeFile(`${path}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
}

const { files, gzipBytes } = await initialJs(WEB_DIR);
const kb = (n: number) => `${(n / 1024).toFixed(1)} kB`;
console.log(`dashboard: initial JavaScript ${kb(gzipBytes)} gzipped in ${files.length} files (budget ${kb(INITIAL_JS_BUDGET_BYTES)})`);
if (gzipBytes > INITIAL_JS_BUDGET_BYTES) {
  console.error("dashboard: initial JavaScript is over its budget");
  process.exitCode = 1;
}
