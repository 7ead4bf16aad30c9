/**
 * Which source module a line of an esbuild bundle belongs to: esbuild marks where each module starts
 * with a `// src/...` (or `// node_modules/...`) comment, so a profile's line number names its module
 * even though the whole gateway is one file.
 */

/** Where each bundled module starts, in line order. */
export function moduleStarts(bundle: string): { line: number; name: string }[] {
  const starts: { line: number; name: string }[] = [];
  for (const [line, text] of bundle.split("\n").entries()) {
    const marker = /^\/\/ ((?:src|node_modules|bench)\/\S+)$/.exec(text);
    if (marker?.[1] !== undefined) starts.push({ line, name: marker[1] });
  }
  return starts;
}

/** The module a bundle line belongs to ("" before the first marker). */
export function moduleAt(starts: readonly { line: number; name: string }[], line: number): string {
  let lo = 0;
  let hi = starts.length - 1;
  let found = "";
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const start = starts[mid];
    if (start === undefined) break;
    if (start.line <= line) {
      found = start.name;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}
