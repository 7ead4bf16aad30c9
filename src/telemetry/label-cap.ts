/**
 * The guard against label cardinality blow-up: every label name may take at most `maxValues` distinct
 * values; later new values are replaced by OVERFLOW_VALUE, so a caller sending a fresh value per request
 * (a request id in a dimension header, a made-up tool name) cannot grow the registry without bound.
 */

/** The value a label takes once its cap is reached. */
export const OVERFLOW_VALUE = "__overflow__";

/** Default distinct values per label name. */
export const DEFAULT_MAX_LABEL_VALUES = 1000;

/** Counts distinct values per label name and folds the excess into OVERFLOW_VALUE. */
export class LabelCap {
  private readonly seen = new Map<string, Set<string>>();
  private overflowed = 0;

  constructor(readonly maxValues: number = DEFAULT_MAX_LABEL_VALUES) {
    if (!Number.isInteger(maxValues) || maxValues < 1) throw new RangeError(`maxValues must be a positive integer, got ${maxValues}`);
  }

  /** The value to record for `label`: `value` itself while the cap allows it, else OVERFLOW_VALUE. */
  admit(label: string, value: string): string {
    let values = this.seen.get(label);
    if (values === undefined) {
      values = new Set();
      this.seen.set(label, values);
    }
    if (values.has(value)) return value;
    if (values.size >= this.maxValues) {
      this.overflowed++;
      return OVERFLOW_VALUE;
    }
    values.add(value);
    return value;
  }

  /** How many values were folded into OVERFLOW_VALUE so far. */
  get overflowCount(): number {
    return this.overflowed;
  }

  /** Forgets every value (the registry they were counted for is gone). */
  clear(): void {
    this.seen.clear();
  }
}
