/**
 * The subset of google.api.http path templates the bridge serves: literal segments and `{field}`
 * variables. Everything else in the grammar (`*`, `**`, `{field=pattern}`, `:verb`, nested field
 * paths) is refused so that a rule the bridge cannot honour stops start-up instead of misrouting.
 */

/** One segment of a compiled template. */
export type TemplateSegment = { kind: "literal"; value: string } | { kind: "variable"; field: string };

/** The parsed template, or why it is refused. */
export type ParsedTemplate = { ok: true; segments: TemplateSegment[] } | { ok: false; reason: string };

const LITERAL = /^[A-Za-z0-9._~-]+$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Parses a template such as `/api/mcp/client/{client_id}`. */
export function parsePathTemplate(template: string): ParsedTemplate {
  if (!template.startsWith("/")) return refuse("a path template must start with /");
  if (template.includes("=")) return refuse("variable patterns ({field=...}) are not supported; use {field}");
  const last = template.slice(template.lastIndexOf("/"));
  if (last.includes(":")) return refuse('custom verbs (":verb") are not supported');
  const segments: TemplateSegment[] = [];
  const seen = new Set<string>();
  for (const raw of template.slice(1).split("/")) {
    if (raw === "") return refuse("empty path segments (// or a trailing /) are not supported");
    if (raw === "*" || raw === "**") return refuse(`wildcard segment "${raw}" is not supported; use {field}`);
    if (raw.startsWith("{") || raw.endsWith("}")) {
      const name = raw.startsWith("{") && raw.endsWith("}") ? raw.slice(1, -1) : undefined;
      if (name === undefined) return refuse(`segment "${raw}" mixes a variable with literal text`);
      if (name.includes(".")) return refuse(`nested field path {${name}} is not supported; bind a top-level field`);
      if (!FIELD_NAME.test(name)) return refuse(`"{${name}}" is not a field name`);
      if (seen.has(name)) return refuse(`variable {${name}} appears twice`);
      seen.add(name);
      segments.push({ kind: "variable", field: name });
      continue;
    }
    if (!LITERAL.test(raw)) return refuse(`literal segment "${raw}" has characters outside A-Z a-z 0-9 . _ ~ -`);
    segments.push({ kind: "literal", value: raw });
  }
  return { ok: true, segments };
}

function refuse(reason: string): ParsedTemplate {
  return { ok: false, reason };
}
