/**
 * Splitting a requested model into provider and model. A name is `<provider>/<model>` only when the part
 * before the first slash is a provider the gateway knows, because model ids themselves contain slashes
 * (`meta-llama/Llama-3.3-70B` is a bare model; `openrouter/openai/gpt-4o` is openrouter's `openai/gpt-4o`).
 */
import { RoutingError } from "./routing-error.js";
import type { RouteTarget } from "./types.js";

/** A parsed model name: `provider` is null for a bare model. */
export interface ParsedModel {
  provider: string | null;
  model: string;
}

/** Parses `model` or `provider/model`; `isProvider` decides whether the first segment is a provider. */
export function parseModelName(
  text: string,
  isProvider: (name: string) => boolean,
  field = "model",
): ParsedModel {
  if (text.trim() === "") {
    throw new RoutingError("caller_invalid_model", `${field} is empty; name a model, e.g. "gpt-4o-mini" or "openai/gpt-4o-mini"`, field);
  }
  if (text !== text.trim()) {
    throw new RoutingError("caller_invalid_model", `${field} "${text}" has leading or trailing whitespace; remove it`, field);
  }
  const slash = text.indexOf("/");
  if (slash > 0 && isProvider(text.slice(0, slash))) {
    const model = text.slice(slash + 1);
    if (model === "") {
      throw new RoutingError(
        "caller_invalid_model",
        `${field} "${text}" names provider "${text.slice(0, slash)}" but no model; write "${text}<model>"`,
        field,
      );
    }
    return { provider: text.slice(0, slash), model };
  }
  if (slash === 0 || text.endsWith("/")) {
    throw new RoutingError("caller_invalid_model", `${field} "${text}" is malformed; write "<model>" or "<provider>/<model>"`, field);
  }
  return { provider: null, model: text };
}

/** Strips `provider/` from an allowed_models entry; entries naming another prefix are model ids as they are. */
export function stripProviderPrefix(entry: string, provider: string): string {
  const prefix = `${provider}/`;
  return entry.startsWith(prefix) ? entry.slice(prefix.length) : entry;
}

/** Formats a target the way the /v1 wire and the fallbacks field write it: `provider/model`. */
export function formatTarget(target: RouteTarget): string {
  return `${target.provider}/${target.model}`;
}
