/**
 * Bundles the gateway's entry points into dist/ with its npm packages inside, which `npm start` then runs.
 * Node's ES module loader resolves, reads and links every module file on its own, and the gateway's
 * packages hold a great many of them: inside one bundle a restart reaches `/ready` markedly sooner.
 * Packages that read files of their own at run time stay in node_modules.
 *
 *   node --import tsx src/build-bundle.ts <outdir> <entry>...
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "acorn";
import { build, type BuildOptions, type OutputFile, type Plugin } from "esbuild";

/**
 * Packages loaded from node_modules rather than bundled: PGlite and QuickJS load WebAssembly and data files
 * beside their modules, pino starts its transports as worker threads from its own files, and the rest are
 * loaded only when a deployment configures what needs them (OAuth server, code mode, Redis, Bedrock,
 * tracing's W3C propagator), so bundling them would only grow the build. The database drivers are the ones
 * knex and MikroORM name but this gateway never loads: PostgreSQL's `pg` is bundled.
 */
export const EXTERNAL_PACKAGES: readonly string[] = [
  "@electric-sql/*",
  "quickjs-emscripten",
  "pino",
  "oidc-provider",
  "json-schema-to-typescript",
  "ioredis",
  "@opentelemetry/core",
  "@smithy/*",
  "@aws-crypto/*",
  "better-sqlite3",
  "libsql",
  "mariadb",
  "mariadb/*",
  "mysql",
  "mysql2",
  "oracledb",
  "pg-native",
  "pg-query-stream",
  "sqlite3",
  "tedious",
];

/**
 * A bundled CommonJS package that looks for a `package.json` that is not beside it (MikroORM tries
 * `../../package.json` before `../package.json` to find its own version) must not find the gateway's own
 * beside the bundle at run time: it gets a module that is not found, as it would in node_modules.
 */
const missingPackageJson: Plugin = {
  name: "missing-package-json",
  setup(b) {
    b.onResolve({ filter: /(^|\/)package\.json$/ }, (args) => {
      if (!args.path.startsWith(".") || !args.importer.includes("/node_modules/")) return undefined;
      if (existsSync(resolve(dirname(args.importer), args.path))) return undefined;
      return { path: args.path, namespace: "missing-package-json" };
    });
    b.onLoad({ filter: /.*/, namespace: "missing-package-json" }, (args) => ({
      contents: `throw Object.assign(new Error(${JSON.stringify(`Cannot find module '${args.path}'`)}), { code: "MODULE_NOT_FOUND" });`,
      loader: "js",
    }));
  },
};

/** Why the build stands a module in for umzug's command-line interface. */
export const UMZUG_CLI_LEFT_OUT = "umzug's command-line interface is left out of the gateway's build: the gateway runs its migrations through MikroORM's migrator";

/**
 * umzug (under MikroORM's migrator) re-exports its command-line interface from its index, and that module
 * loads @rushstack/ts-command-line with its own file-system library, argument parser and JSON-schema
 * validator: a large body of source that a first start on a new database kept in memory for good (and in
 * the server's peak resident memory under load) only to define classes the gateway never
 * constructs. The build gives umzug a module in its place whose one class refuses to be constructed.
 */
const umzugWithoutCli: Plugin = {
  name: "umzug-without-cli",
  setup(b) {
    b.onResolve({ filter: /^\.\/cli$/ }, (args) => {
      if (!/[\\/]node_modules[\\/]umzug[\\/]lib[\\/]/.test(args.importer)) return undefined;
      return { path: "umzug-cli", namespace: "umzug-without-cli" };
    });
    b.onLoad({ filter: /.*/, namespace: "umzug-without-cli" }, () => ({
      contents: `exports.UmzugCLI = class UmzugCLI { constructor() { throw new Error(${JSON.stringify(UMZUG_CLI_LEFT_OUT)}); } };`,
      loader: "js",
    }));
  },
};

/** True when the module at `path` is an ES module: `.mjs`, or `.js` under a package.json whose type is module. */
function isEsModule(path: string): boolean {
  if (path.endsWith(".mjs")) return true;
  if (path.endsWith(".cjs")) return false;
  for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = resolve(dir, "package.json");
    if (existsSync(manifest)) return (JSON.parse(readFileSync(manifest, "utf8")) as { type?: string }).type === "module";
  }
  return false;
}

/**
 * Fails the build when a package imported with `import()` would be bundled as CommonJS: esbuild puts it in a
 * chunk of its own that exports only `default`, so the named exports the code reads would be undefined at
 * run time though every test, run from the sources, passes. Such a package belongs in EXTERNAL_PACKAGES.
 */
const lazyCommonJs: Plugin = {
  name: "lazy-commonjs",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.kind !== "dynamic-import" || args.pluginData === "lazy-commonjs") return undefined;
      const resolved = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: "lazy-commonjs" });
      if (resolved.errors.length > 0 || resolved.external || isEsModule(resolved.path)) return resolved;
      return { errors: [{ text: `"${args.path}" is imported lazily but is CommonJS: add it to EXTERNAL_PACKAGES, or a split chunk will lose its named exports` }] };
    });
  },
};

/** The esbuild options of a server bundle: ESM for Node 20, lazily imported modules split into chunks of their own. */
export function serverBundleOptions(entryPoints: string[], outdir: string): BuildOptions {
  return {
    entryPoints,
    outdir,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    splitting: true,
    // V8 keeps every script's source text in memory for lazy compilation: without the layout and the
    // comments the files the gateway loads hold markedly fewer characters.
    // Names stay as they are (MikroORM reads entity constructors' parameter names from their source), and
    // the source maps still lead back to the sources.
    minifyWhitespace: true,
    // The bundled packages' license notices go to a .LEGAL.txt beside each file rather than into the code V8
    // loads: they hold authors' names in any script, and every file the gateway loads stays ASCII.
    legalComments: "external",
    sourcemap: true,
    external: [...EXTERNAL_PACKAGES],
    // Bundled CommonJS packages call require() for Node's built-in modules, which an ES module lacks.
    banner: { js: 'import { createRequire as __gwCreateRequire } from "node:module"; const require = __gwCreateRequire(import.meta.url);' },
    plugins: [missingPackageJson, lazyCommonJs, umzugWithoutCli],
    logLevel: "warning",
  };
}

/**
 * `code` with every non-ASCII character inside a comment replaced by "?" (one per UTF-16 unit, so source
 * map columns hold). esbuild writes strings and identifiers as ASCII escapes but keeps comments as they are,
 * and a single "’" in a package's comment makes V8 hold the whole file's source as a two-byte string: the
 * bundle's source stays in memory for lazy compilation, so that doubled the heap the bundle's source takes.
 * Returns null when non-ASCII text is left outside the comments.
 */
export function asciiComments(code: string): string | null {
  if (!/[^\x00-\x7f]/.test(code)) return code;
  const chars = code.split("");
  parse(code, {
    ecmaVersion: "latest",
    sourceType: "module",
    allowHashBang: true,
    onComment: (_block, _text, start, end) => {
      for (let i = start; i < end; i++) if ((chars[i] as string).charCodeAt(0) > 0x7f) chars[i] = "?";
    },
  });
  const out = chars.join("");
  return /[^\x00-\x7f]/.test(out) ? null : out;
}

/** Builds a server bundle into `outdir`: esbuild with serverBundleOptions, then its JavaScript made ASCII (asciiComments). */
export async function buildServerBundle(entryPoints: string[], outdir: string): Promise<void> {
  const result = await build({ ...serverBundleOptions(entryPoints, outdir), write: false });
  await Promise.all(result.outputFiles.map((file) => writeOutput(file)));
}

async function writeOutput(file: OutputFile): Promise<void> {
  await mkdir(dirname(file.path), { recursive: true });
  if (!file.path.endsWith(".js")) return writeFile(file.path, file.contents);
  const ascii = asciiComments(file.text);
  // Left as it is when esbuild let non-ASCII text through outside a comment: correct, only larger in memory.
  return writeFile(file.path, ascii ?? file.text);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [outdir, ...entries] = process.argv.slice(2);
  if (outdir === undefined || entries.length === 0) {
    process.stderr.write("usage: build-bundle <outdir> <entry>...\n");
    process.exit(2);
  }
  await buildServerBundle(entries, outdir);
}
