/**
 * The pins of a client's tool definitions in its row (mcp_client.tool_pins), merged in the database so two
 * nodes pinning at once keep one pin per tool: a first pin never replaces a stored one; an approval does.
 * A change of the row reaches the other nodes like any client change.
 */
import type { Store } from "../../store/index.js";
import { pinsOf } from "./tool-screens.js";

/** Stores `pins` (over the stored ones with `replace`, else only for tools without one); answers every pin stored. */
export async function storePins(store: Store, clientId: string, pins: Record<string, string>, replace: boolean): Promise<Record<string, string>> {
  const merged = replace ? `"tool_pins" || ?::jsonb` : `?::jsonb || "tool_pins"`;
  const rows: { tool_pins?: unknown }[] = await store.fork().getConnection().execute(`update "mcp_client" set "tool_pins" = ${merged} where "id" = ? returning "tool_pins"`, [JSON.stringify(pins), clientId], "all");
  const stored = rows[0]?.tool_pins;
  // A client deleted meanwhile has no row: what was to be stored is all there is.
  if (stored === undefined) return { ...pins };
  return pinsOf(typeof stored === "string" ? JSON.parse(stored) : stored);
}
