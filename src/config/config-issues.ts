/**
 * Problems found in a config file, and the one error they become. A bad file must be fixable in one pass,
 * so every problem is collected and reported on its own line with the path of the field, written the way
 * a user finds it in the JSON (`mcp.client_configs[0].name`).
 */
import { GatewayError } from "../errors.js";

/** A step into the JSON document: an object key or an array index. */
export type ConfigPathSegment = string | number;

/** One problem at one place in the file. */
export interface ConfigIssue {
  path: readonly ConfigPathSegment[];
  message: string;
}

/** Keys that read naturally after a dot; header names such as `X-Api-Key` included. */
const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** Formats a path as `a.b[0].c`, quoting keys that would be ambiguous (`headers["a.b"]`). */
export function formatConfigPath(path: readonly ConfigPathSegment[]): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) text += text === "" ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text === "" ? "(top level)" : text;
}

/** Formats one issue as the line a user reads. */
export function formatConfigIssue(issue: ConfigIssue): string {
  return `config error at ${formatConfigPath(issue.path)}: ${issue.message}`;
}

/** Turns the collected issues into one invalid_argument error, one issue per line, `field` set to the first issue's path. */
export function configIssuesError(issues: readonly ConfigIssue[]): GatewayError {
  const lines = [...new Set(issues.map(formatConfigIssue))];
  const first = issues[0];
  return new GatewayError("invalid_argument", lines.join("\n"), {
    field: first === undefined || first.path.length === 0 ? undefined : formatConfigPath(first.path),
  });
}

/**
 * Names a wrong value for a message without echoing strings: a string in the wrong place may well be a
 * secret resolved from the environment.
 */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return "a string";
    case "number":
    case "boolean":
      return String(value);
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}
