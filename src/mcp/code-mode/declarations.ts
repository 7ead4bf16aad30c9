/**
 * The TypeScript declarations code mode shows a model: each tool's input schema compiled to a type by
 * json-schema-to-typescript, its description as a doc comment, and a method `<client>.<tool>(input)`.
 * Laid out per client (`servers/<client>.d.ts`, binding level `server`) or per tool
 * (`servers/<client>/<tool>.d.ts`, binding level `tool`). Compiled declarations are cached per client
 * and recompiled only when that client's tool list changes.
 */
import type { DiscoveredTool } from "../discover.js";

/** The compiler, loaded on first use: a gateway without code-mode clients never pays for it at start. */
let compiler: Promise<typeof import("json-schema-to-typescript")> | null = null;

/** How tool files are laid out. */
export type BindingLevel = "server" | "tool";

/** The tools of one client a caller may use. */
export interface ClientTools {
  clientName: string;
  tools: readonly DiscoveredTool[];
}

/** One tool's declaration: its input types and its method line. */
interface ToolDeclaration {
  types: string;
  method: string;
}

/**
 * Compiled declarations by client and tool (name, description and schema), so a tool is compiled again
 * only when it changes, whichever subset of a client's tools a caller sees.
 */
const compiled = new Map<string, Promise<ToolDeclaration>>();
/** Bounds the cache: far above any real catalogue, so only churn of changing tools ever clears it. */
const MAX_COMPILED = 10_000;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A property key as TypeScript needs it. */
function key(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** A doc comment that cannot be closed early by its text. */
function docComment(text: string, indent: string): string {
  const lines = text.replaceAll("*/", "*\\/").split(/\r?\n/);
  return `${indent}/**\n${lines.map((line) => `${indent} * ${line}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

/** `<Client><Tool>Input`, letters and digits only, so it is a valid and distinct type name. */
function typeName(client: string, tool: string): string {
  const pascal = (s: string) =>
    s
      .split(/[^A-Za-z0-9]+/)
      .filter((part) => part !== "")
      .map((part) => part[0]?.toUpperCase() + part.slice(1))
      .join("");
  const name = `${pascal(client)}${pascal(tool)}Input`;
  return /^[A-Za-z]/.test(name) ? name : `T${name}`;
}

async function declare(client: string, tool: DiscoveredTool): Promise<ToolDeclaration> {
  const name = typeName(client, tool.name);
  // The root type takes the name given, not the schema's title.
  const { title: _title, ...schema }: Record<string, unknown> = { type: "object", ...tool.inputSchema };
  compiler ??= import("json-schema-to-typescript");
  const { compile } = await compiler;
  let types: string;
  try {
    types = await compile(schema as Parameters<typeof compile>[0], name, {
      bannerComment: "",
      format: false,
      additionalProperties: false,
      // No reference leaves the schema: no file system, no network.
      $refOptions: { resolve: { file: false, http: false } },
    });
  } catch {
    types = `export type ${name} = Record<string, unknown>;\n`;
  }
  const description = tool.description.trim() === "" ? `Tool ${tool.name} of ${client}.` : tool.description;
  return { types: types.trim(), method: `${docComment(description, "  ")}  ${key(tool.name)}(input: ${name}): Promise<unknown>;` };
}

/** The declaration of one tool, compiled once per version of the tool. */
function declarationOf(client: string, tool: DiscoveredTool): Promise<ToolDeclaration> {
  const cacheKey = JSON.stringify([client, tool.name, tool.description, tool.inputSchema]);
  const cached = compiled.get(cacheKey);
  if (cached) return cached;
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  const declaration = declare(client, tool);
  compiled.set(cacheKey, declaration);
  return declaration;
}

/** The declarations of a client's tools, by tool name. */
async function declarationsOf(client: ClientTools): Promise<Map<string, ToolDeclaration>> {
  const out = new Map<string, ToolDeclaration>();
  for (const tool of client.tools) out.set(tool.name, await declarationOf(client.clientName, tool));
  return out;
}

/** A declaration file for some tools of one client. */
function fileText(client: string, parts: readonly ToolDeclaration[]): string {
  const header = `// Tools of MCP server "${client}". Call them in executeToolCode as \`await ${client}.<tool>({...})\`.\n`;
  const types = parts.map((part) => part.types).join("\n\n");
  const methods = parts.map((part) => part.method).join("\n");
  return `${header}\n${types}\n\ndeclare const ${client}: {\n${methods}\n};\n`;
}

/** The file name of a client's declarations (binding level server) or of one tool (binding level tool). */
export function fileName(client: string, tool?: string): string {
  return tool === undefined ? `servers/${client}.d.ts` : `servers/${client}/${tool}.d.ts`;
}

/** Every tool file of these clients, by file name, laid out per `level`. */
export async function toolFiles(clients: readonly ClientTools[], level: BindingLevel): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const client of clients) {
    const declarations = await declarationsOf(client);
    const parts = client.tools.map((tool) => declarations.get(tool.name)).filter((part) => part !== undefined);
    if (level === "server") {
      files.set(fileName(client.clientName), fileText(client.clientName, parts));
      continue;
    }
    client.tools.forEach((tool, i) => {
      const part = parts[i];
      if (part) files.set(fileName(client.clientName, tool.name), fileText(client.clientName, [part]));
    });
  }
  return files;
}

/** The declaration of one tool, as a file of its own; undefined when the client has no such tool. */
export async function toolDocs(client: ClientTools, tool: string): Promise<string | undefined> {
  const found = client.tools.find((t) => t.name === tool);
  return found === undefined ? undefined : fileText(client.clientName, [await declarationOf(client.clientName, found)]);
}
