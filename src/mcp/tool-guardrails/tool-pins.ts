/**
 * A tool's pinned definition: the SHA-256 of its name, description and input schema in canonical JSON
 * (every object's keys sorted, at every depth), so a server that lists the same definition with its keys in another
 * order keeps its pin, and any change of wording or schema does not.
 */
import { sha256Hex } from "../../sha256.js";
import type { DiscoveredTool } from "../upstream-session.js";

/** Why a tool whose pin no longer matches is quarantined. */
export const PIN_CHANGED = "definition changed since it was pinned";

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** JSON with every object's keys sorted. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (!isObject(inner)) return inner;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(inner).sort()) sorted[key] = inner[key];
    return sorted;
  });
}

/** The hash a tool's definition is pinned by. */
export function definitionHash(tool: Pick<DiscoveredTool, "name" | "description" | "inputSchema">): string {
  return sha256Hex(canonicalJson({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema }));
}
