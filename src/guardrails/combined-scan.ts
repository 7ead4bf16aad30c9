/**
 * One pass over a text for many detectors. Each detector is a pattern plus, where a pattern alone cannot
 * tell, a confirmation in code (a checksum, a decoded header). The patterns are joined into one regular
 * expression, one alternative each, so a clean text is read once by the engine and allocates nothing; only
 * where some pattern matches does code run. A match a detector does not confirm is retried with the
 * detectors after it at the same place, so joining never hides a match a detector would have made alone.
 */
import { NO_FINDINGS, type Finding } from "./check-types.js";

/** A pattern for one kind of finding. */
export interface Detector {
  readonly kind: string;
  /** Regular-expression source without capturing groups (the scanner numbers the detectors by group). */
  readonly source: string;
  /** Set on findings, where one kind has several patterns worth telling apart. */
  readonly rule?: string;
  /**
   * Decides whether the match `[start, end)` is a finding and which part of the text it covers; null
   * rejects it. A finding may cover less than the match (a token without its label), or begin before it:
   * a pattern that starts at a rare character (an e-mail's `@`) and lets code walk back is much faster than
   * one the engine must try at every letter. A finding that would overlap the one before it is dropped.
   */
  readonly confirm?: (text: string, start: number, end: number) => Finding | null;
}

/** A compiled set of detectors. */
export class CombinedScanner {
  readonly #detectors: readonly Detector[];
  readonly #combined: RegExp;
  /** Each detector alone, anchored where it is tried: used only after another detector's rejection. */
  readonly #alone: readonly RegExp[];
  readonly #unicode: boolean;

  /** Compiles `detectors` (earlier ones win where two match at one place) with the flags `flags` (without `g`, `y`). */
  constructor(detectors: readonly Detector[], flags = "") {
    if (detectors.length === 0) throw new Error("a combined scanner needs at least one detector");
    for (const d of detectors) {
      const groups = new RegExp(`${d.source}|`, flags).exec("")?.length ?? 0;
      if (groups !== 1) throw new Error(`detector ${d.rule ?? d.kind} has capturing groups`);
    }
    this.#detectors = detectors;
    this.#combined = new RegExp(detectors.map((d) => `(${d.source})`).join("|"), `g${flags}`);
    this.#alone = detectors.map((d) => new RegExp(d.source, `y${flags}`));
    this.#unicode = flags.includes("u");
  }

  /** The findings in `text`, in order, none overlapping another. */
  scan(text: string): readonly Finding[] {
    const combined = this.#combined;
    combined.lastIndex = 0;
    let found: Finding[] | undefined;
    let previousEnd = 0;
    for (let m = combined.exec(text); m !== null; m = combined.exec(text)) {
      const at = m.index;
      let which = 0;
      while (m[which + 1] === undefined) which++;
      let finding = this.#confirm(which, text, at, at + m[0].length, previousEnd);
      for (let next = which + 1; finding === null && next < this.#detectors.length; next++) finding = this.#tryAlone(next, text, at, previousEnd);
      if (finding === null) {
        combined.lastIndex = at + this.#step(text, at);
        continue;
      }
      (found ??= []).push(finding);
      previousEnd = finding.end;
      combined.lastIndex = finding.end > at ? finding.end : at + this.#step(text, at);
    }
    return found ?? NO_FINDINGS;
  }

  #tryAlone(index: number, text: string, at: number, previousEnd: number): Finding | null {
    const alone = this.#alone[index];
    if (alone === undefined) return null;
    alone.lastIndex = at;
    const m = alone.exec(text);
    return m === null ? null : this.#confirm(index, text, at, at + m[0].length, previousEnd);
  }

  #confirm(index: number, text: string, start: number, end: number, previousEnd: number): Finding | null {
    const d = this.#detectors[index];
    if (d === undefined) return null;
    if (d.confirm !== undefined) {
      const finding = d.confirm(text, start, end);
      return finding !== null && finding.start >= previousEnd ? finding : null;
    }
    return d.rule === undefined ? { kind: d.kind, start, end } : { kind: d.kind, start, end, rule: d.rule };
  }

  /** How far to move past a rejected start: a whole surrogate pair under the `u` flag, which cannot start inside one. */
  #step(text: string, at: number): number {
    if (!this.#unicode) return 1;
    const c = text.charCodeAt(at);
    return c >= 0xd800 && c <= 0xdbff && at + 1 < text.length ? 2 : 1;
  }
}
