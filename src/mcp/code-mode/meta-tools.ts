/**
 * The four code-mode meta-tools that stand in for the tools of code-mode clients: listToolFiles,
 * readToolFile and getToolDocs show the generated declarations, executeToolCode runs code calling the
 * tools in the sandbox. Every tool call the code makes goes through the caller's `invoke` (the runtime's
 * execute, with its credentials, timeouts and metrics); the meta-tools themselves are not tool executions.
 */
import { McpAuthRequiredError } from "../credentials/index.js";
import type { OfferedTool } from "../runtime.js";
import { prefixedToolName } from "../tool-names.js";
import type { ToolCallResult } from "../upstream-session.js";
import { calledTools } from "./code-source.js";
import { toolDocs, toolFiles, type BindingLevel, type ClientTools } from "./declarations.js";
import { DEFAULT_SANDBOX_MEMORY_BYTES, runSandboxed, SandboxStop } from "./sandbox.js";

export const LIST_TOOL_FILES = "listToolFiles";
export const READ_TOOL_FILE = "readToolFile";
export const GET_TOOL_DOCS = "getToolDocs";
export const EXECUTE_TOOL_CODE = "executeToolCode";

/** A meta-tool as offered to models and /mcp callers. */
export interface MetaTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Only reads declarations: agent mode always runs it. */
  readOnly: boolean;
}

/** The meta-tools, in the order they are offered. */
export const META_TOOLS: readonly MetaTool[] = [
  {
    name: LIST_TOOL_FILES,
    description: "Lists the TypeScript declaration files of the MCP tools you can call from executeToolCode.",
    inputSchema: { type: "object", properties: {} },
    readOnly: true,
  },
  {
    name: READ_TOOL_FILE,
    description: "Reads a declaration file from listToolFiles, optionally only lines startLine to endLine (1-based, inclusive).",
    inputSchema: {
      type: "object",
      properties: { fileName: { type: "string" }, startLine: { type: "integer", minimum: 1 }, endLine: { type: "integer", minimum: 1 } },
      required: ["fileName"],
    },
    readOnly: true,
  },
  {
    name: GET_TOOL_DOCS,
    description: "Shows the declaration of one tool of one server: its description and input type.",
    inputSchema: { type: "object", properties: { server: { type: "string" }, tool: { type: "string" } }, required: ["server", "tool"] },
    readOnly: true,
  },
  {
    name: EXECUTE_TOOL_CODE,
    description:
      "Runs JavaScript in a sandbox (no imports, network, file system or timers). Call tools as `await <server>.<tool>({...})` " +
      "as declared in the tool files; chain several calls in one run. Returns the value of the last expression, or of a variable named result, as JSON.",
    inputSchema: { type: "object", properties: { code: { type: "string" } }, required: ["code"] },
    readOnly: false,
  },
];

const META_NAMES: ReadonlySet<string> = new Set(META_TOOLS.map((tool) => tool.name));

/** True for the name of a meta-tool. */
export function isMetaTool(name: string): boolean {
  return META_NAMES.has(name);
}

/** What the meta-tools of one caller work with. */
export interface CodeModeScope {
  /** The code-mode clients' tools the caller sees; nothing else is listed or callable. */
  tools: readonly OfferedTool[];
  bindingLevel: BindingLevel;
  /** The whole run of executeToolCode (the tool execution timeout). */
  timeoutMs: number;
  memoryBytes?: number;
  /** Runs `<client>-<tool>` for the caller; throws what the runtime's execute throws. */
  invoke(prefixedName: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult>;
  signal?: AbortSignal;
  /** When set, the code may call only these `<client>-<tool>` (agent mode: the calls read before it ran). */
  allowedCalls?: ReadonlySet<string>;
}

/** The result of one meta-tool call. */
export interface MetaOutcome {
  content: string;
  isError: boolean;
  /** Set when a call in the code needs a per-user credential first; `content` is then the mcp_auth_required JSON. */
  authRequired: McpAuthRequiredError | null;
}

function ok(content: string): MetaOutcome {
  return { content, isError: false, authRequired: null };
}

function failed(message: string): MetaOutcome {
  return { content: `Error: ${message}`, isError: true, authRequired: null };
}

/** The scope's tools grouped by client, in the order offered. */
function byClient(tools: readonly OfferedTool[]): ClientTools[] {
  const clients = new Map<string, ClientTools & { tools: OfferedTool["tool"][] }>();
  for (const offer of tools) {
    let entry = clients.get(offer.clientName);
    if (!entry) {
      entry = { clientName: offer.clientName, tools: [] };
      clients.set(offer.clientName, entry);
    }
    entry.tools.push(offer.tool);
  }
  return [...clients.values()];
}

function optionalLine(args: Record<string, unknown>, name: string): number | undefined | string {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) return `${name} must be an integer of at least 1`;
  return value;
}

async function readToolFile(args: Record<string, unknown>, scope: CodeModeScope): Promise<MetaOutcome> {
  const name = args["fileName"];
  if (typeof name !== "string") return failed("fileName is required: a file name from listToolFiles");
  const start = optionalLine(args, "startLine");
  const end = optionalLine(args, "endLine");
  if (typeof start === "string") return failed(start);
  if (typeof end === "string") return failed(end);
  const files = await toolFiles(byClient(scope.tools), scope.bindingLevel);
  const text = files.get(name);
  if (text === undefined) return failed(`no tool file "${name}"; the files are: ${[...files.keys()].join(", ")}`);
  if (start === undefined && end === undefined) return ok(text);
  const lines = text.split("\n");
  return ok(lines.slice((start ?? 1) - 1, end ?? lines.length).join("\n"));
}

async function getToolDocs(args: Record<string, unknown>, scope: CodeModeScope): Promise<MetaOutcome> {
  const server = args["server"];
  const tool = args["tool"];
  if (typeof server !== "string" || typeof tool !== "string") return failed("server and tool are required: a server name and one of its tool names");
  const client = byClient(scope.tools).find((c) => c.clientName === server);
  const docs = client === undefined ? undefined : await toolDocs(client, tool);
  if (docs === undefined) return failed(`no tool "${tool}" of server "${server}" is available; listToolFiles shows the ones that are`);
  return ok(docs);
}

/** A tool's result as the code receives it: the JSON value of its text, or the text itself. */
function valueOf(result: ToolCallResult): unknown {
  try {
    return JSON.parse(result.content) as unknown;
  } catch {
    return result.content;
  }
}

async function executeToolCode(args: Record<string, unknown>, scope: CodeModeScope): Promise<MetaOutcome> {
  const code = args["code"];
  if (typeof code !== "string" || code.trim() === "") return failed("code is required: JavaScript calling tools as `await <server>.<tool>({...})`");
  const bindings = new Map<string, string[]>();
  for (const client of byClient(scope.tools)) bindings.set(client.clientName, client.tools.map((tool) => tool.name));
  const outcome = await runSandboxed(
    code,
    bindings,
    async (client, tool, toolArgs, signal) => {
      const name = prefixedToolName(client, tool);
      if (scope.allowedCalls && !scope.allowedCalls.has(name)) throw new Error(`${client}.${tool} is not called by name in the code, so it was not approved to run`);
      if (toolArgs === null || typeof toolArgs !== "object" || Array.isArray(toolArgs)) throw new Error(`${client}.${tool} takes one object argument`);
      let result: ToolCallResult;
      try {
        result = await scope.invoke(name, toolArgs as Record<string, unknown>, signal);
      } catch (err) {
        // The user must submit a credential first: the run ends and the caller gets the flow's payload.
        if (err instanceof McpAuthRequiredError) throw new SandboxStop(err);
        throw err;
      }
      if (result.isError) throw new Error(`${client}.${tool} failed: ${result.content}`);
      return valueOf(result);
    },
    { timeoutMs: scope.timeoutMs, memoryBytes: scope.memoryBytes ?? DEFAULT_SANDBOX_MEMORY_BYTES },
    scope.signal,
  );
  if (outcome.kind === "value") return ok(outcome.json);
  if (outcome.kind === "error") return failed(outcome.message);
  const auth = outcome.outcome as McpAuthRequiredError;
  return { content: auth.toolResult, isError: true, authRequired: auth };
}

/** Runs a meta-tool for the caller of `scope`; every failure is an error result, never a throw. */
export async function runMetaTool(name: string, args: Record<string, unknown>, scope: CodeModeScope): Promise<MetaOutcome> {
  switch (name) {
    case LIST_TOOL_FILES:
      return ok([...(await toolFiles(byClient(scope.tools), scope.bindingLevel)).keys()].join("\n"));
    case READ_TOOL_FILE:
      return readToolFile(args, scope);
    case GET_TOOL_DOCS:
      return getToolDocs(args, scope);
    case EXECUTE_TOOL_CODE:
      return executeToolCode(args, scope);
    default:
      return failed(`"${name}" is not a code-mode tool`);
  }
}

/**
 * The `<client>-<tool>` names executeToolCode's code calls, when agent mode may run it on its own: every
 * call names a tool of `tools` that is auto-executable and nothing reaches tools dynamically. Null when
 * the code must go back to the caller instead. Code that does not parse calls nothing and may run (it
 * only reports its syntax error).
 */
export function autoRunnableCalls(args: Record<string, unknown>, tools: readonly OfferedTool[]): ReadonlySet<string> | null {
  const code = args["code"];
  if (typeof code !== "string") return new Set();
  const read = calledTools(code, new Set(tools.map((offer) => offer.clientName)));
  if ("kind" in read) return new Set();
  if (read.dynamic) return null;
  const names = new Set<string>();
  for (const call of read.calls) {
    const name = prefixedToolName(call.client, call.tool);
    const offer = tools.find((t) => t.name === name);
    if (offer === undefined || !offer.autoExecute) return null;
    names.add(name);
  }
  return names;
}
