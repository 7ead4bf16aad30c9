/** Reading the guardrail test corpora: JSON files beside the tests, one per check. */
import { readFileSync } from "node:fs";

/** The parsed corpus `name` (without `.json`); the caller states its shape. */
export function corpus<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`./corpus/${name}.json`, import.meta.url), "utf8")) as T;
}

/** The text of each finding, for comparing with a corpus's expected matches. */
export function texts(text: string, findings: readonly { start: number; end: number }[]): string[] {
  return findings.map((f) => text.slice(f.start, f.end));
}
