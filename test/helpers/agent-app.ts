/**
 * The agent-mode test setup shared by the wire formats: a scripted model behind provider `openai`, two
 * fixture MCP servers (`docs`: every tool auto-executed; `manual`: every tool offered, none auto-executed),
 * and a virtual key allowed both.
 */
import assert from "node:assert/strict";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { scriptedInference, startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model.js";
import { api, startApp, type TestApp } from "./app.js";

/** The running setup. */
export interface AgentApp {
  app: TestApp;
  model: ScriptedModel;
  docs: McpFixture;
  manual: McpFixture;
  close(): Promise<void>;
}

/** Registers `fixture` as HTTP MCP client `name`, every tool executable, `toolsToAutoExecute` auto-executed; answers its client_id. */
export async function createMcpClient(app: TestApp, name: string, fixture: McpFixture, toolsToAutoExecute: string[]): Promise<string> {
  const res = await api(app, "POST", "/api/mcp/client", {
    name,
    connection_type: "http",
    connection_string: fixture.httpUrl,
    tools_to_execute: ["*"],
    tools_to_auto_execute: toolsToAutoExecute,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.client_id as string;
}

/** Starts the model, the MCP servers and the app with virtual key `key` (model gpt-4o-mini on openai). */
export async function startAgentApp(key: string): Promise<AgentApp> {
  const model = await startScriptedModel();
  const docs = await startMcpFixture();
  const manual = await startMcpFixture();
  const app = await startApp({
    inference: scriptedInference(model, [
      {
        id: "vk-agent",
        name: "agent",
        value: key,
        provider_configs: [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }],
        mcp_configs: [
          { mcp_client_name: "docs", tools_to_execute: ["*"] },
          { mcp_client_name: "manual", tools_to_execute: ["*"] },
        ],
      },
    ]),
  });
  await createMcpClient(app, "docs", docs, ["*"]);
  await createMcpClient(app, "manual", manual, []);
  return {
    app,
    model,
    docs,
    manual,
    async close() {
      await app.stop();
      await Promise.all([model.close(), docs.close(), manual.close()]);
    },
  };
}
