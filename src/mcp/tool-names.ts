/** How tools are named to models (`<client>-<tool>`) and which tools a client offers. */

/** The name a model sees for a client's tool. */
export function prefixedToolName(client: string, tool: string): string {
  return `${client}-${tool}`;
}

/**
 * Splits a prefixed name on the first hyphen (client names cannot contain one, tool names may).
 * Returns null when there is no hyphen or either side is empty.
 */
export function splitToolName(name: string): { client: string; tool: string } | null {
  const at = name.indexOf("-");
  if (at <= 0 || at === name.length - 1) return null;
  return { client: name.slice(0, at), tool: name.slice(at + 1) };
}

/** True when `tool` passes a tools_to_execute style list: ["*"] all, [] none, otherwise listed names. */
export function toolAllowed(list: readonly string[], tool: string): boolean {
  return list.includes("*") || list.includes(tool);
}

/** True when a tool runs without approval: in tools_to_auto_execute and also in tools_to_execute. */
export function toolAutoExecutable(spec: { toolsToExecute: readonly string[]; toolsToAutoExecute: readonly string[] }, tool: string): boolean {
  return toolAllowed(spec.toolsToExecute, tool) && toolAllowed(spec.toolsToAutoExecute, tool);
}
