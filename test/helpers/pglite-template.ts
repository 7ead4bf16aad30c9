/**
 * A migrated embedded-database directory to copy into each test's data directory. A fresh PGlite
 * initdb costs seconds; copying an initialized one costs a fraction of that. The template is keyed by
 * the migrations, the PGlite version and the code that builds it, so a schema change builds a new one.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { copyContents, createEmbeddedTemplate } from "../../src/store/index.js";
import { createLogger } from "../../src/telemetry/logger.js";

const MIGRATIONS = new URL("../../src/store/migrations/", import.meta.url);
const PGLITE_PACKAGE = new URL("../../node_modules/@electric-sql/pglite/package.json", import.meta.url);
const TEMPLATE_BUILDER = new URL("../../src/store/embedded-template.ts", import.meta.url);

let template: Promise<string> | undefined;

async function templateKey(): Promise<string> {
  const hash = createHash("sha256");
  hash.update(await readFile(PGLITE_PACKAGE));
  hash.update(await readFile(TEMPLATE_BUILDER));
  for (const name of (await readdir(MIGRATIONS)).sort()) hash.update(name).update(await readFile(new URL(name, MIGRATIONS)));
  return hash.digest("hex").slice(0, 16);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}

async function buildTemplate(): Promise<string> {
  const dir = join(tmpdir(), `gw-pglite-cluster-${await templateKey()}`);
  if (await exists(join(dir, "PG_VERSION"))) return dir;
  const building = `${dir}.${randomBytes(4).toString("hex")}`;
  await createEmbeddedTemplate(building, createLogger({ level: "error" }));
  // Another test process may have won the race; either copy is as good.
  await rename(building, dir).catch(async () => rm(building, { recursive: true, force: true }));
  return dir;
}

/** Copies the migrated embedded database into `dataDir`, as a first start copies the build's template. */
export async function seedEmbeddedDatabase(dataDir: string): Promise<void> {
  template ??= buildTemplate();
  const target = join(dataDir, "pglite");
  await mkdir(target, { recursive: true, mode: 0o700 });
  await copyContents(await template, target);
}
