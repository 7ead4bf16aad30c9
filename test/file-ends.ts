/**
 * What the lanes make of file-ends-reporter.ts's lines: a line to print per test file whose process ended with a
 * signal or an exit code of its own, and which files to run once more. A file is run again only when a signal
 * ended its process before any of its tests reported and nothing else failed: such a file's code never ran a
 * test, so the end came from outside it (a signal sent to a process of the machine's, a crash of node itself),
 * and a second run, alone, tells a passing file from a broken one. A file that exited with a code, or that a
 * signal ended after its tests began, failed in its own code and is not run again.
 */
import type { FileEnd, OtherFailures } from "./file-ends-reporter.js";

/** What one runner's reporter lines say. */
export interface FileEnds {
  /** Lines naming each file whose process ended on its own terms, and how. */
  readonly lines: string[];
  /** The files to run once more, alone; empty unless every failure of the run was such a file. */
  readonly again: string[];
}

/**
 * Reads the reporter's lines (`text`); `relative` turns a reported path into the lane's name for the file, and
 * files named in `hung` (stopped by the watchdog, which has waited long enough for them) are never run again.
 */
export function readFileEnds(text: string, relative: (path: string) => string, hung: ReadonlySet<string>): FileEnds {
  const ends: FileEnd[] = [];
  let otherFailures = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const parsed = JSON.parse(line) as FileEnd | OtherFailures;
    if ("otherFailures" in parsed) otherFailures += parsed.otherFailures;
    else ends.push(parsed);
  }
  const lines = ends.map((end) => {
    const how = end.signal !== null ? `was ended by ${end.signal}` : `exited with code ${end.code ?? "none"}`;
    return `== ${relative(end.file)}: its process ${how} after ${end.reported} of its tests reported\n`;
  });
  const killedBeforeTests = (end: FileEnd): boolean => end.signal !== null && end.reported === 0 && !hung.has(relative(end.file));
  const again = otherFailures === 0 && ends.length > 0 && ends.every(killedBeforeTests) ? ends.map((end) => relative(end.file)) : [];
  return { lines, again };
}
