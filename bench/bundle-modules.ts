/**
 * Which source module a position in an esbuild bundle belongs to, from the source map the build writes
 * beside it (`<bundle>.map`): a profile's line and column then name their module although the whole gateway
 * is one file, and the bundle's layout (minified, with no comment left to mark where a module starts)
 * does not matter.
 */
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";

/** The module (`src/...`, `node_modules/...`, `bench/...`) at a zero-based line and column; "" when the map names none. */
export type ModuleLocator = (line: number, column: number) => string;

/** The locator of the bundle at `bundleFile`; one that names nothing when the bundle has no source map. */
export function moduleLocator(bundleFile: string): ModuleLocator {
  const mapFile = `${bundleFile}.map`;
  if (!existsSync(mapFile)) return () => "";
  const map = new SourceMap(JSON.parse(readFileSync(mapFile, "utf8")) as ConstructorParameters<typeof SourceMap>[0]);
  const names = new Map<string, string>();
  return (line, column) => {
    // Node's typing says an entry is always found; an empty object comes back when it is not.
    const source = (map.findEntry(line, column) as { originalSource?: string }).originalSource;
    if (source === undefined) return "";
    let name = names.get(source);
    if (name === undefined) {
      // Sources are relative to the bundle's folder, which sits one or more levels under the repository.
      name = source.replace(/^(?:\.\.?\/)+/, "");
      names.set(source, name);
    }
    return name;
  };
}
