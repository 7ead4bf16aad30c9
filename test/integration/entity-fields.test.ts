/**
 * One schema for the config file and the API, proved field by field: the protos' descriptors are walked so
 * that every writable field of every entity (at every depth) must appear in a sample below, or in the list
 * of fields refused until their feature exists. Each sample is then accepted through the config file and
 * through updates, and reads back equal. A field added to a proto without a sample fails the first test.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { DescMessage } from "@bufbuild/protobuf";
import { McpClientSchema } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { ClientSettingsSchema, ToolManagerConfigSchema } from "../../gen/gw/admin/v1/settings_pb.js";
import { ProviderSchema } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { BusinessUnitSchema, CustomerSchema, RoutingRuleSchema, TeamSchema, VirtualKeySchema } from "../../gen/gw/routing/v1/governance_pb.js";
import { appOptionsFromConfig } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { isOutputOnly } from "../../src/proto-json/field-mask.js";
import { presenceListItemMessage } from "../../src/proto-json/presence-list.js";
import { isWellKnownMessage } from "../../src/proto-json/well-known.js";
import { SECRET_FIELDS } from "../../src/services/inference/cloud-key-wire.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { testServiceAccount } from "../fixtures/service-account.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

type Json = Record<string, any /* JSON of any shape */>;

let fixture: McpFixture;
const SERVICE_ACCOUNT_JSON = JSON.stringify(testServiceAccount("walk").json);
const UPSTREAM = "http://127.0.0.1:9/unused";

/** Samples in the API's JSON, setting every writable field of their entity between them. */
function providerSamples(): Json[] {
  return [
    {
      name: "azure",
      keys: [
        {
          id: "az",
          name: "Azure main",
          value: "sk-azure-walk",
          models: ["fast"],
          aliases: { fast: "gpt-4o" },
          weight: 2,
          azure_key_config: { endpoint: UPSTREAM, deployments: { "gpt-4o": "dep-4o" }, api_version: "2024-10-21" },
        },
      ],
      network_config: { base_url: UPSTREAM, default_request_timeout_in_seconds: 30, max_retries: 0, stream_idle_timeout_in_seconds: 45, max_response_bytes: 2097152 },
      concurrency_and_buffer_size: { concurrency: 4, buffer_size: 16 },
    },
    {
      name: "bedrock",
      keys: [
        {
          id: "br",
          name: "Bedrock main",
          value: "",
          weight: 1,
          models: ["claude"],
          aliases: { claude: "anthropic.claude-3-5-sonnet-20240620-v1:0" },
          bedrock_key_config: { access_key: "AKIAWALK", secret_key: "walk-secret", region: "us-east-1", session_token: "walk-token" },
        },
      ],
      network_config: { base_url: UPSTREAM, default_request_timeout_in_seconds: 30, max_retries: 0, stream_idle_timeout_in_seconds: 60, max_response_bytes: 1048576 },
    },
    {
      name: "vertex",
      keys: [
        {
          id: "vx",
          name: "Vertex main",
          value: "",
          weight: 1,
          models: ["gemini-2.5-flash"],
          aliases: {},
          vertex_key_config: { project_id: "walk-project", region: "europe-west4", auth_credentials: SERVICE_ACCOUNT_JSON },
        },
      ],
      network_config: { base_url: UPSTREAM, default_request_timeout_in_seconds: 30, max_retries: 0, stream_idle_timeout_in_seconds: 60, max_response_bytes: 1048576 },
    },
  ];
}

function virtualKeySamples(): Json[] {
  return [
    {
      id: "vk-walk",
      name: "walk",
      value: "sk-gw-walk",
      is_active: false,
      provider_configs: [
        {
          provider: "azure",
          allowed_models: ["fast"],
          key_ids: ["az"],
          weight: 2,
          // Provider configs take no calendar alignment or request limit: reads show them unset.
          budgets: [{ max_limit: 10, reset_duration: "1d", calendar_aligned: false }],
          rate_limit: { token_max_limit: 1000, token_reset_duration: "1h", request_max_limit: 0, request_reset_duration: "" },
        },
      ],
      mcp_configs: [{ mcp_client_name: "walk_http", tools_to_execute: ["echo"] }],
      team_id: "team-walk",
      customer_id: "cu-walk",
      budget: { max_limit: 5, reset_duration: "1M", calendar_aligned: true },
      rate_limit: { request_max_limit: 100, request_reset_duration: "1m", token_max_limit: 5000, token_reset_duration: "1h" },
      cache: { mode: "direct", ttl: "30m", threshold: 0.9 },
    },
  ];
}

const LIMITS = {
  budget: { max_limit: 50, reset_duration: "1Q", calendar_aligned: false },
  rate_limit: { request_max_limit: 1000, request_reset_duration: "1h", token_max_limit: 100000, token_reset_duration: "1d" },
};

/** Business units, customers and teams, parents first, as `[path segment, kind, schema, sample]`. */
function groupSamples(): [string, DescMessage, Json][] {
  return [
    ["business-units", BusinessUnitSchema, { id: "bu-walk", name: "walk unit", ...LIMITS }],
    ["customers", CustomerSchema, { id: "cu-walk", name: "walk customer", business_unit_id: "bu-walk", ...LIMITS }],
    ["teams", TeamSchema, { id: "team-walk", name: "walk team", customer_id: "cu-walk", ...LIMITS }],
  ];
}

function routingRuleSamples(): Json[] {
  return [
    {
      id: "rr-walk",
      name: "walk",
      description: "every field of a rule",
      enabled: false,
      priority: 4,
      scope: "virtual_key",
      scope_id: "vk-walk",
      cel_expression: `headers["x-walk"] == "1"`,
      targets: [{ provider: "azure", model: "fast", key_id: "az", weight: 2 }],
      fallbacks: ["azure/gpt-4o"],
      chain_rule: true,
    },
  ];
}

function mcpClientSamples(): Json[] {
  return [
    {
      name: "walk_http",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      auth_type: "headers",
      headers: { "X-Key": { value: "walk-secret" } },
      tools_to_execute: ["echo"],
      tools_to_auto_execute: ["echo"],
      tool_sync_interval: 5,
      needs_session_stickiness: true,
      disabled: true,
      allow_on_all_virtual_keys: true,
      is_code_mode_client: true,
      tool_pinning: true,
    },
    { name: "walk_pu", connection_type: "http", connection_string: fixture.httpUrl, auth_type: "per_user_headers", per_user_header_keys: ["X-User"], disabled: true },
    {
      name: "walk_oauth",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      auth_type: "oauth",
      oauth_config: {
        client_id: "gw",
        client_secret: "walk-oauth-secret",
        authorize_url: "https://auth.example.com/authorize?audience=mcp",
        token_url: "https://auth.example.com/token",
        registration_url: "https://auth.example.com/register",
        revocation_url: "https://auth.example.com/revoke",
        scopes: ["mcp:tools", "offline_access"],
        resource: "https://mcp.example.com/mcp",
      },
      disabled: true,
    },
    {
      name: "walk_te",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      auth_type: "token_exchange",
      token_exchange: {
        audience: "https://mcp.example.com/api",
        client_id: "gw",
        client_secret: "walk-te-secret",
        authorization_server_url: "https://idp.example.com/token",
        scopes: ["mcp.read"],
        grant_style: "entra_obo",
      },
      disabled: true,
    },
    { name: "walk_stdio", connection_type: "stdio", stdio_config: { command: "node", args: ["server.js"], envs: ["HOME"] }, disabled: true },
  ];
}

/** The settings: `mcp.tool_manager_config` and `client` in the file, their own GET and update in the API. */
const TOOL_MANAGER: Json = { max_agent_depth: 7, tool_execution_timeout: "45s", code_mode_binding_level: "tool" };
const CLIENT_SETTINGS: Json = {
  prometheus_labels: ["team"],
  drop_excess_requests: true,
  initial_pool_size: 10,
  allowed_headers: ["x-team"],
  mcp_enable_temp_token_auth: true,
  mcp_external_client_url: "http://127.0.0.1:1",
  mcp_tool_sync_interval: 15,
  enforce_governance: true,
  mcp_disable_auto_tool_inject: true,
  allowed_hosts: ["gw.example.test"],
  allowed_origins: ["https://app.example.test"],
  mcp_server_auth_mode: "headers",
  mcp_relay_request_timeout: "45s",
};

/** Fields accepted by neither the file nor the API until their feature exists, with a value that sets them. */
const REFUSED: readonly { entity: "provider" | "virtual_key"; path: string; value: unknown }[] = [
  { entity: "provider", path: "network_config.max_retries", value: 3 },
  { entity: "virtual_key", path: "provider_configs[0].budgets[0].calendar_aligned", value: true },
  { entity: "virtual_key", path: "provider_configs[0].rate_limit.request_max_limit", value: 5 },
  { entity: "virtual_key", path: "provider_configs[0].rate_limit.request_reset_duration", value: "1m" },
];

/** Only the API's create takes these (the one-time verify); the file refuses them. */
const CREATE_ONLY = ["McpClient.user_headers"];

/** Input-only second names of fields the samples cover (Bifrost's `provider` for `name`); reads never show them. */
const ALIASES = ["Provider.provider"];

/** Every writable leaf of `desc` as `Message.a.b` (lists and maps of messages walked into). */
function writablePaths(desc: DescMessage, prefix = desc.name): string[] {
  return desc.fields.flatMap((field) => {
    if (isOutputOnly(field)) return [];
    const path = `${prefix}.${field.name}`;
    const nested = nestedMessage(field);
    return nested === undefined ? [path] : writablePaths(nested, path);
  });
}

function nestedMessage(field: DescMessage["fields"][number]): DescMessage | undefined {
  const message =
    field.fieldKind === "message" ? field.message : field.fieldKind === "list" && field.listKind === "message" ? field.message : field.fieldKind === "map" && field.mapKind === "message" ? field.message : undefined;
  if (message === undefined || isWellKnownMessage(message)) return undefined;
  // A presence-aware list is written as the bare array of its items.
  return presenceListItemMessage(message) ?? message;
}

/** The leaves a sample sets, in the same notation. */
function samplePaths(desc: DescMessage, json: Json, prefix = desc.name): string[] {
  return Object.entries(json).flatMap(([key, value]) => {
    const field = desc.fields.find((f) => f.name === key);
    assert.ok(field, `${prefix}.${key} is not a field`);
    const path = `${prefix}.${key}`;
    const nested = nestedMessage(field);
    if (nested === undefined) return [path];
    const items: Json[] = Array.isArray(value) ? value : field.fieldKind === "map" ? Object.values(value) : [value];
    return items.flatMap((item) => samplePaths(nested, item, path));
  });
}

function refusedPath(entity: string, path: string): string {
  return `${entity === "provider" ? "Provider" : "VirtualKey"}.${path.replace(/\[\d+\]/g, "")}`;
}

/** A sample as the config file writes it: header values as strings, tool_sync_interval as a duration. */
function asFileEntry(client: Json): Json {
  const entry: Json = { ...client };
  if (entry["headers"]) entry["headers"] = Object.fromEntries(Object.entries(entry["headers"] as Json).map(([k, v]) => [k, (v as Json)["value"]]));
  if (typeof entry["tool_sync_interval"] === "number") entry["tool_sync_interval"] = `${entry["tool_sync_interval"] as number}m`;
  return entry;
}

/** What a GET shows for a sample: secrets redacted. */
function asRead(sample: Json): Json {
  const copy = structuredClone(sample);
  if (typeof copy["value"] === "string") copy["value"] = "<redacted>";
  for (const key of copy["keys"] ?? []) {
    if (typeof key.value === "string" && key.value !== "") key.value = "<redacted>";
    for (const [block, fields] of Object.entries(SECRET_FIELDS)) {
      for (const field of fields) if (key[block]?.[field] !== undefined) key[block][field] = "<redacted>";
    }
  }
  for (const header of Object.values((copy["headers"] ?? {}) as Json)) header.value = "<redacted>";
  if (copy["oauth_config"]?.client_secret) copy["oauth_config"].client_secret = "<redacted>";
  if (copy["token_exchange"]?.client_secret) copy["token_exchange"].client_secret = "<redacted>";
  return copy;
}

function assertReadsBack(read: Json, sample: Json, what: string): void {
  const expected = asRead(sample);
  for (const key of Object.keys(expected)) assert.deepEqual(read[key], expected[key], `${what}.${key}`);
}

async function getAll(app: TestApp) {
  const provider = (name: string) => api(app, "GET", `/api/v1/providers/${name}`).then((r) => r.body.provider as Json);
  const virtualKey = (id: string) => api(app, "GET", `/api/governance/virtual-keys/${id}`).then((r) => r.body.virtual_key as Json);
  const routingRule = (id: string) => api(app, "GET", `/api/governance/routing-rules/${id}`).then((r) => r.body.routing_rule as Json);
  const clients = (await api(app, "GET", "/api/mcp/clients")).body.clients as Json[];
  return { provider, virtualKey, routingRule, client: (name: string) => clients.find((c) => c["name"] === name) as Json };
}

before(async () => {
  fixture = await startMcpFixture();
});

after(async () => {
  await fixture?.close();
});

describe("every writable field of every entity", () => {
  test("appears in a sample, in the refused list or in the create-only list", () => {
    const covered = new Set([
      ...providerSamples().flatMap((s) => samplePaths(ProviderSchema, s)),
      ...virtualKeySamples().flatMap((s) => samplePaths(VirtualKeySchema, s)),
      ...routingRuleSamples().flatMap((s) => samplePaths(RoutingRuleSchema, s)),
      ...groupSamples().flatMap(([, desc, s]) => samplePaths(desc, s)),
      ...mcpClientSamples().flatMap((s) => samplePaths(McpClientSchema, s)),
      ...samplePaths(ToolManagerConfigSchema, TOOL_MANAGER),
      ...samplePaths(ClientSettingsSchema, CLIENT_SETTINGS),
      ...REFUSED.flatMap((r) => {
        const base = refusedPath(r.entity, r.path);
        const desc = r.entity === "provider" ? ProviderSchema : VirtualKeySchema;
        // A refused message is covered down to its leaves.
        return writablePaths(desc).filter((p) => p === base || p.startsWith(`${base}.`));
      }),
      ...CREATE_ONLY,
      ...ALIASES,
    ]);
    const missing = [ProviderSchema, VirtualKeySchema, RoutingRuleSchema, BusinessUnitSchema, CustomerSchema, TeamSchema, McpClientSchema, ToolManagerConfigSchema, ClientSettingsSchema].flatMap((desc) => writablePaths(desc)).filter((p) => !covered.has(p));
    assert.deepEqual(missing, [], "fields with no sample: add one above (or to REFUSED until the feature exists)");
  });

  test("are accepted by the config file and read back equal", async () => {
    const file = parseConfig(
      {
        providers: Object.fromEntries(providerSamples().map(({ name, ...rest }) => [name, rest])),
        governance: {
          business_units: [groupSamples()[0]?.[2]],
          customers: [groupSamples()[1]?.[2]],
          teams: [groupSamples()[2]?.[2]],
          virtual_keys: virtualKeySamples(),
          routing_rules: routingRuleSamples(),
        },
        mcp: { client_configs: mcpClientSamples().map(asFileEntry), tool_manager_config: TOOL_MANAGER },
        client: CLIENT_SETTINGS,
      },
      {},
    );
    const app = await startApp(appOptionsFromConfig(file));
    try {
      assertReadsBack((await api(app, "GET", "/api/settings/mcp/tool-manager-config")).body.config, TOOL_MANAGER, "tool manager");
      assertReadsBack((await api(app, "GET", "/config")).body.config.client, CLIENT_SETTINGS, "client settings");
      const read = await getAll(app);
      for (const sample of providerSamples()) assertReadsBack(await read.provider(sample["name"]), sample, `provider ${sample["name"]}`);
      for (const sample of virtualKeySamples()) assertReadsBack(await read.virtualKey(sample["id"]), sample, `virtual key ${sample["id"]}`);
      for (const sample of routingRuleSamples()) assertReadsBack(await read.routingRule(sample["id"]), sample, `routing rule ${sample["id"]}`);
      for (const [path, , sample] of groupSamples()) assertReadsBack(Object.values((await api(app, "GET", `/api/governance/${path}/${sample["id"] as string}`)).body as Json)[0] as Json, sample, path);
      for (const sample of mcpClientSamples()) assertReadsBack(read.client(sample["name"]), sample, `MCP client ${sample["name"]}`);
    } finally {
      await app.stop();
    }
  });

  test("are accepted by updates, one field at a time, and read back equal", async () => {
    const app = await startApp();
    const put = async (path: string, body: Json) => {
      const res = await api(app, "PUT", path, body);
      assert.equal(res.status, 200, `PUT ${path} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
    };
    try {
      for (const { name, ...fields } of providerSamples()) {
        assert.equal((await api(app, "POST", "/api/v1/providers", { name })).status, 200);
        for (const [key, value] of Object.entries(fields)) await put(`/api/v1/providers/${name}`, { [key]: value });
      }
      for (const [path, , { id, name, ...fields }] of groupSamples()) {
        const created = await api(app, "POST", `/api/governance/${path}`, { id, name });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        for (const [key, value] of Object.entries(fields)) await put(`/api/governance/${path}/${id as string}`, { [key]: value });
      }
      for (const { id, ...fields } of virtualKeySamples()) {
        assert.equal((await api(app, "POST", "/api/governance/virtual-keys", { id, name: "minimal" })).status, 200);
        for (const [key, value] of Object.entries(fields)) await put(`/api/governance/virtual-keys/${id}`, { [key]: value });
      }
      for (const { id, scope, scope_id, ...fields } of routingRuleSamples()) {
        assert.equal((await api(app, "POST", "/api/governance/routing-rules", { id, name: "minimal", targets: [{ provider: "azure" }] })).status, 200);
        // A scope other than global needs its scope_id in the same update.
        await put(`/api/governance/routing-rules/${id}`, { scope, scope_id });
        for (const [key, value] of Object.entries(fields)) await put(`/api/governance/routing-rules/${id}`, { [key]: value });
      }
      // A stdio client needs an admin session to be created through the API, and its stdio_config is
      // immutable; both are covered elsewhere (the file above, read-modify-write).
      const clients = mcpClientSamples().filter((c) => c["connection_type"] !== "stdio");
      for (const sample of clients) {
        const { name, connection_type, connection_string, auth_type, per_user_header_keys, ...fields } = sample;
        const created = await api(app, "POST", "/api/mcp/client", {
          name,
          connection_type,
          connection_string,
          auth_type,
          disabled: true,
          // An auth type's required fields come with the create; the PUTs below send them again.
          ...(fields["headers"] ? { headers: { "X-Key": { value: "first" } } } : {}),
          ...(per_user_header_keys ? { per_user_header_keys, user_headers: { "X-User": "sample" } } : {}),
          ...(fields["oauth_config"] ? { oauth_config: fields["oauth_config"] } : {}),
          ...(fields["token_exchange"] ? { token_exchange: { audience: "https://first.example.com", client_id: "first" } } : {}),
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        for (const [key, value] of Object.entries({ per_user_header_keys, ...fields })) {
          if (value !== undefined) await put(`/api/mcp/client/${created.body.client_id as string}`, { [key]: value });
        }
      }
      for (const [key, value] of Object.entries(TOOL_MANAGER)) await put("/api/settings/mcp/tool-manager-config", { [key]: value });
      for (const [key, value] of Object.entries(CLIENT_SETTINGS)) {
        const res = await api(app, "PATCH", "/config", { client: { [key]: value } });
        assert.equal(res.status, 200, `PATCH /config ${key}: ${JSON.stringify(res.body)}`);
      }
      assertReadsBack((await api(app, "GET", "/api/settings/mcp/tool-manager-config")).body.config, TOOL_MANAGER, "tool manager");
      assertReadsBack((await api(app, "GET", "/config")).body.config.client, CLIENT_SETTINGS, "client settings");
      const read = await getAll(app);
      for (const sample of providerSamples()) assertReadsBack(await read.provider(sample["name"]), sample, `provider ${sample["name"]}`);
      for (const sample of virtualKeySamples()) assertReadsBack(await read.virtualKey(sample["id"]), sample, `virtual key ${sample["id"]}`);
      for (const sample of routingRuleSamples()) assertReadsBack(await read.routingRule(sample["id"]), sample, `routing rule ${sample["id"]}`);
      for (const [path, , sample] of groupSamples()) assertReadsBack(Object.values((await api(app, "GET", `/api/governance/${path}/${sample["id"] as string}`)).body as Json)[0] as Json, sample, path);
      for (const sample of clients) assertReadsBack(read.client(sample["name"]), sample, `MCP client ${sample["name"]}`);
    } finally {
      await app.stop();
    }
  });

  test("that are not supported yet are refused by the file and the API, naming them", async () => {
    const app = await startApp();
    try {
      const [provider] = providerSamples();
      const [key] = virtualKeySamples();
      assert.ok(provider && key);
      assert.equal((await api(app, "POST", "/api/v1/providers", provider)).status, 200);
      for (const [path, , sample] of groupSamples()) assert.equal((await api(app, "POST", `/api/governance/${path}`, sample)).status, 200);
      assert.equal((await api(app, "POST", "/api/governance/virtual-keys", key)).status, 200);
      for (const { entity, path, value } of REFUSED) {
        const entry: Json = structuredClone(entity === "provider" ? provider : key);
        const parts = path.split(/\.|\[(\d+)\]\.?/).filter((p) => p !== undefined && p !== "");
        let at: Json = entry;
        for (const part of parts.slice(0, -1)) at = at[part] as Json;
        at[parts.at(-1) as string] = value;
        const { name, ...rest }: Json = entry;
        const file = () =>
          entity === "provider"
            ? inferenceOptionsFromFile(parseConfig({ providers: { [name as string]: rest } }, {}).providers, [])
            : inferenceOptionsFromFile({}, parseConfig({ governance: { virtual_keys: [entry] } }, {}).governance.virtualKeys);
        assert.throws(file, (err: Error) => err.message.includes(path), `the file refuses ${entity} ${path}`);
        const top = parts[0] as string;
        const res: { status: number; body: Json } =
          entity === "provider"
            ? await api(app, "PUT", `/api/v1/providers/${name as string}`, { [top]: entry[top] })
            : await api(app, "PUT", `/api/governance/virtual-keys/${key["id"] as string}`, { [top]: entry[top] });
        assert.equal(res.status, 400, `the API refuses ${entity} ${path}`);
        assert.ok((res.body.error.message as string).includes(path), res.body.error.message);
      }
    } finally {
      await app.stop();
    }
  });

  test("user_headers are refused by the config file", () => {
    const [client] = mcpClientSamples();
    assert.throws(
      () => parseConfig({ mcp: { client_configs: [{ ...asFileEntry(client ?? {}), user_headers: { "X-User": "v" } }] } }, {}),
      /mcp\.client_configs\[0\]\.user_headers: is only for the API's one-time verify/,
    );
  });
});
