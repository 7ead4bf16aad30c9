/** Flattens an MCP tool result into the text a model sees. */

/** Text parts joined with "\n"; other parts (image, resource, ...) as compact JSON. */
export function toolResultText(result: unknown): string {
  if (typeof result !== "object" || result === null) return "";
  const r = result as { content?: unknown; structuredContent?: unknown; toolResult?: unknown };
  if (Array.isArray(r.content) && r.content.length > 0) {
    return r.content
      .map((part: unknown) => {
        const p = part as { type?: unknown; text?: unknown };
        return p.type === "text" && typeof p.text === "string" ? p.text : JSON.stringify(part);
      })
      .join("\n");
  }
  // A result with structured content only, or the pre-2024-11 `toolResult` shape, still says something.
  if (r.structuredContent !== undefined) return JSON.stringify(r.structuredContent);
  if (r.toolResult !== undefined) return typeof r.toolResult === "string" ? r.toolResult : JSON.stringify(r.toolResult);
  return "";
}
