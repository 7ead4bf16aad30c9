/**
 * `npm run bench:code-mode` (also the first part of `npm run bench`): how large the request sent to the
 * model is for a catalogue of 5 MCP servers x 20 tools, with every tool listed and in code mode, both built
 * by the gateway's own tool injection. Exits 1 when code mode is not at least 80% smaller.
 */
import type { OfferedTool } from "../src/mcp/runtime.js";
import { injectTools, toolsForCaller } from "../src/services/inference/agent-tools.js";
import { NO_INCLUDE } from "../src/services/inference/tool-visibility.js";

const SERVERS = 5;
const TOOLS_PER_SERVER = 20;
const REQUIRED_SAVING = 0.8;

/** A tool with an input schema of the size real MCP servers publish (a few typed, described fields). */
function tool(server: number, index: number, codeMode: boolean): OfferedTool {
  const clientName = `server${server}`;
  const name = `operation_${index}`;
  return {
    name: `${clientName}-${name}`,
    clientId: `id-${server}`,
    clientName,
    autoExecute: true,
    allowOnAllVirtualKeys: true,
    codeMode,
    tool: {
      name,
      description: `Runs operation ${index} of server ${server} on the records that match the query, and returns the matching records with their fields.`,
      inputSchema: {
        type: "object",
        properties: {
          query: { type: "string", description: "Free-text query the records must match" },
          limit: { type: "integer", minimum: 1, maximum: 100, description: "Largest number of records to return" },
          fields: { type: "array", items: { type: "string" }, description: "Fields to include in each record" },
          order: { type: "string", enum: ["asc", "desc"], description: "Sort order of the records" },
          include_archived: { type: "boolean", description: "Whether archived records match too" },
        },
        required: ["query"],
        additionalProperties: false,
      },
    },
  };
}

/** The bytes of the chat request the model receives with the catalogue injected. */
function requestBytes(codeMode: boolean): number {
  const catalogue: OfferedTool[] = [];
  for (let s = 0; s < SERVERS; s++) for (let t = 0; t < TOOLS_PER_SERVER; t++) catalogue.push(tool(s, t, codeMode));
  const body = { model: "gpt-4o-mini", messages: [{ role: "user", content: "Find the open records about invoices." }] };
  const { tools } = toolsForCaller(catalogue, { key: null, ...NO_INCLUDE });
  const injected = injectTools(body, tools, "chat");
  return Buffer.byteLength(JSON.stringify({ ...body, tools: injected.tools }));
}

const listed = requestBytes(false);
const code = requestBytes(true);
const saving = 1 - code / listed;
console.log(`code mode, ${SERVERS} servers x ${TOOLS_PER_SERVER} tools: request to the model`);
console.log(`  all tools listed: ${listed} bytes`);
console.log(`  code mode:        ${code} bytes (${(saving * 100).toFixed(1)}% smaller)`);
if (saving < REQUIRED_SAVING) {
  console.error(`code mode must be at least ${REQUIRED_SAVING * 100}% smaller`);
  process.exit(1);
}
