/**
 * `env.NAME` references in the config file. Secrets (provider keys, MCP headers, the admin password) stay
 * out of the file this way; the reference is resolved once, at load, before validation, so a URL held
 * in a variable is checked like any other URL.
 */
import type { ConfigIssue, ConfigPathSegment } from "./config-issues.js";

const PREFIX = "env.";
/** POSIX portable variable names; anything else after `env.` is almost surely a typo. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The document with references replaced, and one issue per reference that could not be resolved. */
export interface EnvResolution {
  value: unknown;
  issues: ConfigIssue[];
}

/**
 * Replaces every string value of the form `env.NAME` (at any depth; object keys are left alone) with
 * `env[NAME]`. A reference to an unset variable stays as written and yields an issue naming the path
 * and the variable.
 */
export function resolveEnvRefs(value: unknown, env: NodeJS.ProcessEnv, path: readonly ConfigPathSegment[] = []): EnvResolution {
  const issues: ConfigIssue[] = [];
  const walk = (node: unknown, at: readonly ConfigPathSegment[]): unknown => {
    if (typeof node === "string") {
      if (!node.startsWith(PREFIX)) return node;
      const name = node.slice(PREFIX.length);
      if (!ENV_NAME.test(name)) {
        issues.push({
          path: at,
          message: `"${node}" is not a valid environment variable reference: use env.NAME with letters, digits and underscores`,
        });
        return node;
      }
      const resolved = env[name];
      if (resolved === undefined) {
        issues.push({ path: at, message: `environment variable ${name} is not set (referenced as "${node}")` });
        return node;
      }
      return resolved;
    }
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...at, i]));
    if (node !== null && typeof node === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(node)) {
        // defineProperty, not assignment: a "__proto__" key from JSON.parse must stay data, not become a prototype.
        Object.defineProperty(out, key, { value: walk(item, [...at, key]), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return node;
  };
  return { value: walk(value, path), issues };
}
