/**
 * Reads the config file: JSON -> `env.NAME` resolution -> schema -> one error listing every problem with
 * its path, or the normalized config. A bad file stops start-up, so the error has to be enough to fix it.
 */
import { readFile } from "node:fs/promises";
import type { z } from "zod";
import { GatewayError } from "../errors.js";
import { configIssuesError, describeValue, type ConfigIssue, type ConfigPathSegment } from "./config-issues.js";
import { resolveEnvRefs } from "./env-refs.js";
import { gatewayFileConfigSchema, type GatewayFileConfig } from "./file-config.js";

const EXPECTED: Readonly<Record<string, string>> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
  array: "an array",
  object: "an object",
  record: "an object",
};

/** Longer echoes of a wrong enum value would only bury the list of allowed ones. */
const MAX_ECHO = 40;

/** Messages for Zod's built-in issues, worded as instructions about the field the path names. */
function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      return `must be ${EXPECTED[issue.expected] ?? issue.expected}, got ${describeValue(issue.input)}`;
    case "invalid_value": {
      const allowed = issue.values.map((v) => JSON.stringify(v)).join(", ");
      if (issue.input === undefined) return `is required: one of ${allowed}`;
      const got =
        typeof issue.input === "string" && issue.input.length <= MAX_ECHO ? JSON.stringify(issue.input) : describeValue(issue.input);
      return issue.values.length === 1 ? `must be ${allowed} (got ${got})` : `must be one of ${allowed} (got ${got})`;
    }
    case "too_small":
      if (issue.origin === "string") return Number(issue.minimum) <= 1 ? "must not be empty" : `must be at least ${issue.minimum} characters`;
      if (issue.origin === "array") return `must have at least ${issue.minimum} entries`;
      return issue.inclusive === false ? `must be greater than ${issue.minimum}` : `must be at least ${issue.minimum}`;
    case "too_big":
      if (issue.origin === "string") return `must be at most ${issue.maximum} characters`;
      if (issue.origin === "array") return `must have at most ${issue.maximum} entries`;
      return issue.inclusive === false ? `must be less than ${issue.maximum}` : `must be at most ${issue.maximum}`;
    default:
      return undefined;
  }
}

function toConfigIssues(issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    const path = issue.path.map((segment): ConfigPathSegment => (typeof segment === "number" ? segment : String(segment)));
    if (issue.code === "unrecognized_keys") {
      // One line per key, at the key itself, so the path points at the line to delete or fix.
      for (const key of issue.keys) out.push({ path: [...path, key], message: `unknown key; ${issue.message}` });
    } else {
      out.push({ path, message: issue.message });
    }
  }
  return out;
}

function isWithin(path: readonly ConfigPathSegment[], prefix: readonly ConfigPathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => path[i] === segment);
}

/** Validates and normalizes an already-parsed config document; throws one invalid_argument GatewayError listing every problem. */
export function parseConfig(json: unknown, env: NodeJS.ProcessEnv): GatewayFileConfig {
  const resolved = resolveEnvRefs(json, env);
  const result = gatewayFileConfigSchema.safeParse(resolved.value, { error: issueMessage });
  // An unresolved reference is still "env.NAME"; the schema's complaints about that text (not a URL,
  // not a duration) would only repeat the real problem.
  const unresolved = resolved.issues.map((issue) => issue.path);
  const schemaIssues = result.success
    ? []
    : toConfigIssues(result.error.issues).filter((issue) => !unresolved.some((path) => isWithin(issue.path, path)));
  const issues = [...resolved.issues, ...schemaIssues];
  if (issues.length > 0) throw configIssuesError(issues);
  if (!result.success) throw configIssuesError([{ path: [], message: result.error.message }]);
  return result.data;
}

/** "line L column C" for the offset Node 20's JSON.parse reports; newer Node versions say it themselves. */
function jsonErrorLocation(text: string, message: string): string {
  const match = /at position (\d+)/.exec(message);
  if (match === null || /line \d+/.test(message)) return "";
  const before = text.slice(0, Number(match[1]));
  const line = before.split("\n").length;
  const column = before.length - before.lastIndexOf("\n");
  return ` (line ${line} column ${column})`;
}

/** Reads, resolves and validates the JSON config file at `path`; every error names the file. */
export async function loadConfigFile(path: string, env: NodeJS.ProcessEnv): Promise<GatewayFileConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new GatewayError(code === "ENOENT" ? "not_found" : "failed_precondition", `cannot read config file ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }

  // Editors on some platforms save UTF-8 with a byte-order mark, which JSON.parse rejects.
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    const message = (error as Error).message;
    throw new GatewayError("invalid_argument", `config file ${path} is not valid JSON: ${message}${jsonErrorLocation(body, message)}`, {
      cause: error,
    });
  }

  try {
    return parseConfig(json, env);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    throw new GatewayError(error.code, `config file ${path} is invalid:\n${error.message}`, { field: error.field, cause: error });
  }
}
