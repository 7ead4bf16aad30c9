/** Parsing of the small text formats the forms accept. */

/** "a, b ,c" -> ["a","b","c"]; blank entries dropped. */
export function splitList(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** "Name: value" lines -> a map; a line without a colon is refused with its number. */
export function parseHeaderLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`headers line ${i + 1} needs the form "Name: value"`);
    out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  });
  return out;
}
