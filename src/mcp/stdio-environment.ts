/**
 * The environment a stdio MCP server is spawned with: the SDK's small safe default (PATH, HOME, ...)
 * plus exactly the variables the admin listed in stdio_config.envs, so gateway secrets (GW_*) never
 * reach a child by accident.
 */
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { GatewayError } from "../errors.js";
import { upstreamMessage } from "./upstream-errors.js";

/** Builds the child's environment; throws before anything is spawned when a listed variable is not set. */
export function stdioEnvironment(names: readonly string[], source: NodeJS.ProcessEnv): Record<string, string> {
  const env = getDefaultEnvironment();
  names.forEach((name, i) => {
    const value = source[name];
    if (value === undefined) {
      throw new GatewayError(
        "unavailable",
        upstreamMessage(
          `stdio_config.envs names ${name}, which is not set in the gateway's environment: set ${name} where the gateway runs, or remove it from envs`,
        ),
        { type: "upstream_error", field: `stdio_config.envs[${i}]` },
      );
    }
    env[name] = value;
  });
  return env;
}
