/**
 * The repository as plain JavaScript, for the test lanes. Every test file runs in a process of its own, and
 * loading the gateway's module graph through tsx's loader hooks, module by module, costs each of them far more
 * than loading the same graph as JavaScript; so the lanes compile the TypeScript once per run (esbuild, file by
 * file, as tsx itself would: the sources use `verbatimModuleSyntax` and `isolatedModules`) and run the
 * compiled files with plain node.
 *
 * The tree mirrors the repository in a temporary directory: every `.ts` file of the compiled folders becomes
 * a `.js` file beside a link to its source, every other file and folder is a link, so a path a test builds
 * from `import.meta.url` names the same file it names in the repository. Node follows a link to a program's
 * real path, so a test that starts `node --import tsx <file>.ts` runs the source as before.
 */
import { mkdir, mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { build } from "esbuild";

/** The folders whose TypeScript the tests load; everything else in the repository is only linked. */
const COMPILED = ["src", "gen", "test", "web", "bench"];

/** Folders inside the compiled ones that hold no code for node: linked whole. */
const LINKED_WHOLE = new Set(["web/src", "web/dist", "bench/profiles", "bench/k6"]);

/** A compiled copy of `root`; `remove` deletes it. */
export interface CompiledTree {
  readonly dir: string;
  remove(): Promise<void>;
}

/** Compiles `root`'s TypeScript into a fresh temporary tree that mirrors `root`. */
export async function compileTree(root: string): Promise<CompiledTree> {
  const dir = await mkdtemp(join(tmpdir(), "gw-tests-"));
  try {
    const sources: string[] = [];
    const links: string[] = [];
    for (const entry of await readdir(root, { withFileTypes: true })) {
      if (entry.name === ".git") continue;
      if (entry.isDirectory() && COMPILED.includes(entry.name)) await mirror(root, entry.name, sources, links);
      else links.push(entry.name);
    }
    await build({
      absWorkingDir: root,
      entryPoints: sources,
      outdir: dir,
      outbase: ".",
      format: "esm",
      platform: "node",
      // Import attributes (`with { type: "json" }`) are kept from 20.10 on; older targets drop them.
      target: "node20.19",
      sourcemap: "inline",
      tsconfig: join(root, "tsconfig.json"),
      logLevel: "error",
    });
    // Linked after the build, so that esbuild never writes through a link into the repository.
    for (const path of links) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await symlink(join(root, path), join(dir, path)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
    }
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Adds the `.ts` files under `folder` to `sources` and every file, `.ts` ones included, to `links`. */
async function mirror(root: string, folder: string, sources: string[], links: string[]): Promise<void> {
  for (const entry of await readdir(join(root, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory() && !LINKED_WHOLE.has(path)) await mirror(root, path, sources, links);
    else {
      links.push(path);
      if (entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) sources.push(path);
    }
  }
}

/**
 * Compiles the one TypeScript file `source`, which may import only types, to an ES module in `outdir`; resolves
 * with its path. For a module node loads before any `--import` hook can run (a test reporter, on Node 20).
 */
export async function compileFile(source: string, outdir: string): Promise<string> {
  const outfile = join(outdir, basename(source).replace(/\.ts$/, ".mjs"));
  await build({ entryPoints: [source], outfile, format: "esm", platform: "node", target: "node20.19", logLevel: "error" });
  return outfile;
}
