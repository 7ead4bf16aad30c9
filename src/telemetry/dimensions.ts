/**
 * Dimension headers: `x-gw-dim-<label>` (and the deprecated `x-gw-prom-<label>`, metrics only) give
 * values to the custom metric labels of client.prometheus_labels and go to the request's log line. They
 * are read once per request and passed down explicitly: an AsyncLocalStorage scope would install promise
 * hooks that cost every request a large share of its CPU time on Node 20.
 */
import { GatewayError } from "../errors.js";
import { customLabelProblem } from "./label-names.js";

/** Header name prefixes, lower case as Node delivers header names. */
export const DIM_HEADER_PREFIX = "x-gw-dim-";
export const LEGACY_DIM_HEADER_PREFIX = "x-gw-prom-";

/** What one request's dimension headers say. */
export interface RequestDimensions {
  /** label -> value for the configured custom labels (dim header wins over the legacy one). */
  readonly metricValues: Readonly<Record<string, string>>;
  /** label -> value of every x-gw-dim-* header, configured or not, for logs and traces. */
  readonly logValues: Readonly<Record<string, string>>;
}

/** No dimension headers. */
export const NO_DIMENSIONS: RequestDimensions = Object.freeze({ metricValues: Object.freeze({}), logValues: Object.freeze({}) });

type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(",") : (value ?? "");
}

/** Configured label names by their lower-case form, as header names arrive. */
function byLowerCase(labels: readonly string[]): Map<string, string> {
  return new Map(labels.map((label) => [label.toLowerCase(), label]));
}

/**
 * Reads the dimension headers of a request for the configured custom labels. Throws a 400
 * (GatewayError invalid_argument naming the header) when an x-gw-dim-* header names a reserved or
 * invalid label; legacy x-gw-prom-* headers are only read for configured labels and never rejected.
 */
export function readDimensions(headers: HeaderBag, customLabels: readonly string[]): RequestDimensions {
  let metricValues: Record<string, string> | undefined;
  let logValues: Record<string, string> | undefined;
  // Built only when a dimension header is present: most requests carry none.
  let configured: Map<string, string> | undefined;
  let legacy: [string, string][] | undefined;
  for (const rawName in headers) {
    // Both prefixes start with "x": most header names are ruled out without lower-casing them.
    const first = rawName.charCodeAt(0);
    if (first !== 0x78 && first !== 0x58) continue;
    const name = rawName.toLowerCase();
    const rawValue = headers[rawName];
    if (name.startsWith(DIM_HEADER_PREFIX)) {
      const label = name.slice(DIM_HEADER_PREFIX.length);
      const problem = customLabelProblem(label);
      if (problem !== null) {
        throw new GatewayError("invalid_argument", `header ${rawName}: dimension ${problem}; rename the dimension`, { field: rawName });
      }
      const value = headerText(rawValue);
      (logValues ??= {})[label] = value;
      const target = (configured ??= byLowerCase(customLabels)).get(label);
      if (target !== undefined) (metricValues ??= {})[target] = value;
    } else if (name.startsWith(LEGACY_DIM_HEADER_PREFIX)) {
      (legacy ??= []).push([name.slice(LEGACY_DIM_HEADER_PREFIX.length), headerText(rawValue)]);
    }
  }
  for (const [label, value] of legacy ?? []) {
    const target = (configured ??= byLowerCase(customLabels)).get(label);
    // x-gw-dim-<label> wins over x-gw-prom-<label>.
    if (target !== undefined && metricValues?.[target] === undefined) (metricValues ??= {})[target] = value;
  }
  if (metricValues === undefined && logValues === undefined) return NO_DIMENSIONS;
  return { metricValues: metricValues ?? {}, logValues: logValues ?? {} };
}
