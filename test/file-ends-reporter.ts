/**
 * A reporter for node's test runner, beside its spec reporter, that tells the lanes how test files' processes
 * ended. The spec reporter says only "test failed" of a file whose process ended with a signal or an exit code
 * of its own, with nothing of which; this one writes a JSON line per such file (its signal or code, and how
 * many of its tests had reported before it ended), and at the end a line counting every other failure, so that
 * the lanes can name the cause and run again a file that was killed before it ran a test (file-ends.ts).
 */
import type { TestEvent } from "node:test/reporters";

/** A line about one file whose process ended on its own terms rather than its tests'. */
export interface FileEnd {
  readonly file: string;
  readonly code: number | null;
  readonly signal: string | null;
  /** Tests of the file that had passed or failed before its process ended. */
  readonly reported: number;
}

/** The last line: failures that are not a file's process end. */
export interface OtherFailures {
  readonly otherFailures: number;
}

/** The runner's error for a file whose process ended badly carries the code and signal as its own properties. */
function processEnd(error: unknown): { code: number | null; signal: string | null } | undefined {
  if (typeof error !== "object" || error === null || !Object.hasOwn(error, "exitCode")) return undefined;
  const { exitCode, signal } = error as { exitCode?: unknown; signal?: unknown };
  return { code: typeof exitCode === "number" ? exitCode : null, signal: typeof signal === "string" ? signal : null };
}

/** The reporter: one JSON line per file process end, then one with the count of other failures. */
export default async function* fileEndsReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const reported = new Map<string, number>();
  let otherFailures = 0;
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const file = event.data.file ?? "";
    const end = event.type === "test:fail" ? processEnd(event.data.details.error) : undefined;
    if (end !== undefined) {
      const line: FileEnd = { file, ...end, reported: reported.get(file) ?? 0 };
      yield `${JSON.stringify(line)}\n`;
      continue;
    }
    reported.set(file, (reported.get(file) ?? 0) + 1);
    if (event.type === "test:fail") otherFailures++;
  }
  const last: OtherFailures = { otherFailures };
  yield `${JSON.stringify(last)}\n`;
}
