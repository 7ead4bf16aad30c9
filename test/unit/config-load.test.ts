import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { resolveEnvRefs } from "../../src/config/env-refs.js";
import type { GatewayFileConfig } from "../../src/config/file-config.js";
import { loadConfigFile, parseConfig } from "../../src/config/load-config.js";
import { GatewayError } from "../../src/errors.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";

/** Parses `json` expecting failure; returns the error lines. */
function configErrorLines(json: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(json, env);
  } catch (error) {
    assert.ok(error instanceof GatewayError, `expected a GatewayError, got ${String(error)}`);
    assert.equal(error.code, "invalid_argument");
    return error.message.split("\n");
  }
  assert.fail("expected the config to be rejected");
}

/** Asserts the config is rejected with exactly one line, at `path`, starting with `message`. */
function assertRejected(json: unknown, path: string, message: string, env: NodeJS.ProcessEnv = {}): void {
  const lines = configErrorLines(json, env);
  assert.equal(lines.length, 1, `expected one problem, got:\n${lines.join("\n")}`);
  const prefix = `config error at ${path}: ${message}`;
  assert.ok(lines[0]?.startsWith(prefix), `expected a line starting with\n  ${prefix}\ngot\n  ${lines[0]}`);
}

/** A config with the given MCP clients. */
function withClients(...clients: unknown[]): unknown {
  return { mcp: { client_configs: clients } };
}

const HTTP_CLIENT = { name: "docs", connection_type: "http", connection_string: "http://127.0.0.1:9000/mcp" };

/** The one client of a config that must parse. */
function onlyClient(client: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const [parsed] = parseConfig(withClients(client), env).mcp.clientConfigs;
  assert.ok(parsed);
  return parsed;
}

describe("defaults", () => {
  test("fills every default for an empty file", () => {
    const expected: GatewayFileConfig = {
      database: { url: null },
      redis: { url: null, keyPrefix: "gw:" },
      server: { maxHeaderBytes: 16_384, headersTimeoutMs: 30_000, requestTimeoutMs: 300_000, keepAliveTimeoutMs: 65_000, maxConnections: 10_000 },
      authConfig: { isEnabled: false, adminUsername: null, adminPassword: null, sessionTtlMs: 86_400_000 },
      client: {
        prometheusLabels: [],
        dropExcessRequests: false,
        initialPoolSize: 0,
        allowedHeaders: ["*"],
        mcpEnableTempTokenAuth: false,
        mcpExternalClientUrl: "",
        enforceGovernance: false,
        mcpDisableAutoToolInject: false,
        allowedHosts: [],
        allowedOrigins: [],
        mcpServerAuthMode: "headers",
        maxRequestBodyBytes: 16 * 1024 * 1024,
        mcpRelayRequestTimeoutMs: 600_000,
        mcpToolSyncIntervalMinutes: null,
      },
      providers: {},
      governance: { businessUnits: [], customers: [], teams: [], virtualKeys: [], routingRules: [] },
      mcp: {
        clientConfigs: [],
        toolManagerConfig: { maxAgentDepth: 10, toolExecutionTimeoutMs: 30_000, codeModeBindingLevel: "server" },
        toolSyncIntervalMinutes: 10,
        virtualServers: [],
      },
      pricing: { pricingUrl: "", syncIntervalMs: 86_400_000 },
      routing: { complexity: null },
      telemetry: { otlp: { endpoint: "", headers: {}, sampleRatio: null, captureContent: false } },
      loadBalancer: {
        directionSelectionEnabled: true,
        routeSelectionEnabled: true,
        appendFallbacksToPinned: false,
        rerouteFailedDirections: false,
        pruneFailedFallbacks: false,
      },
      network: { egress: { allow: [], deny: [] } },
      cache: { embedding: null },
      sso: { issuer: "", clientId: "", clientSecret: "", scopes: ["openid", "email", "profile"], adminEmails: [], adminGroupClaim: "groups", adminGroups: [] },
      guardrails: [],
    };
    assert.deepEqual(parseConfig({}, {}), expected);
  });

  test("fills the defaults of an MCP client", () => {
    assert.deepEqual(onlyClient(HTTP_CLIENT), {
      name: "docs",
      connectionType: "http",
      connectionString: "http://127.0.0.1:9000/mcp",
      stdioConfig: null,
      authType: "none",
      headers: {},
      perUserHeaderKeys: [],
      toolsToExecute: [],
      toolsToAutoExecute: [],
      toolSyncInterval: 0,
      needsSessionStickiness: null,
      oauthConfig: null,
      disabled: false,
      allowOnAllVirtualKeys: false,
      isCodeModeClient: false,
      tokenExchange: null,
    });
  });

  test("fills the defaults of a stdio config", () => {
    const client = onlyClient({ name: "fs", connection_type: "stdio", stdio_config: { command: "npx" } });
    assert.deepEqual(client.stdioConfig, { command: "npx", args: [], envs: [] });
  });

  test("keeps a provider as the API's JSON, for the parser the API uses", () => {
    const config = parseConfig({ providers: { openai: { keys: [{ id: "k1", name: "main" }] } } }, {});
    assert.deepEqual(config.providers["openai"], { keys: [{ id: "k1", name: "main" }] });
  });

  test("accepts a provider entry that names itself as Bifrost's body does", () => {
    const config = parseConfig({ providers: { openai: { provider: "openai", keys: [{ id: "k1", name: "main" }] } } }, {});
    assert.deepEqual(config.providers["openai"], { keys: [{ id: "k1", name: "main" }] });
  });

  test("refuses a provider entry whose provider field is not the entry's key", () => {
    assertRejected({ providers: { openai: { provider: "groq", keys: [] } } }, "providers.openai.provider", 'is "groq" but the entry\'s key is "openai"');
  });

  test("treats null as an absent optional field", () => {
    const client = onlyClient({ ...HTTP_CLIENT, stdio_config: null, needs_session_stickiness: null, tool_sync_interval: null });
    assert.equal(client.stdioConfig, null);
    assert.equal(client.toolSyncInterval, 0);
  });

  test("fills the defaults of a section given as null", () => {
    assert.deepEqual(parseConfig({ client: null }, {}).client.allowedHeaders, ["*"]);
  });

  test("keeps explicit values over defaults", () => {
    const config = parseConfig(
      {
        client: { prometheus_labels: ["team"], drop_excess_requests: true, initial_pool_size: 50, allowed_headers: ["x-team", "X-Stainless-*"] },
        mcp: { tool_manager_config: { max_agent_depth: 50, tool_execution_timeout: "2m" } },
      },
      {},
    );
    assert.deepEqual(config.client.prometheusLabels, ["team"]);
    assert.equal(config.client.dropExcessRequests, true);
    assert.equal(config.client.initialPoolSize, 50);
    assert.deepEqual(config.client.allowedHeaders, ["x-team", "X-Stainless-*"]);
    assert.equal(config.mcp.toolManagerConfig.maxAgentDepth, 50);
    assert.equal(config.mcp.toolManagerConfig.toolExecutionTimeoutMs, 120_000);
  });

  test("accepts a $schema key for editors", () => {
    assert.doesNotThrow(() => parseConfig({ $schema: "https://example.com/gw.schema.json" }, {}));
  });
});

describe("unknown keys", () => {
  test("rejects an unknown top-level key and lists the allowed ones", () => {
    assertRejected({ bogus: 1 }, "bogus", "unknown key; allowed keys: $schema, database, auth_config");
  });

  test("rejects an unknown key in an MCP client at its own path", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, conection_type: "http" }), "mcp.client_configs[0].conection_type", "unknown key");
  });

  test("rejects an unknown key in a provider key", () => {
    assertRejected({ providers: { openai: { keys: [{ id: "k", name: "n", secret: "x" }] } } }, "providers.openai.keys[0].secret", "unknown key");
  });

  test("rejects an unknown key in the redis section", () => {
    assertRejected({ redis: { url: "redis://127.0.0.1:6379", db: 2 } }, "redis.db", "unknown key");
  });

  test("rejects a redis url that is not a redis URL", () => {
    assertRejected({ redis: { url: "http://127.0.0.1:6379" } }, "redis.url", "must be a redis:// or rediss:// URL");
  });

  test("rejects a top level that is not an object", () => {
    assertRejected([], "(top level)", "must be an object, got an array");
  });
});

describe("env references", () => {
  test("resolves references in headers, keys, passwords and URLs", () => {
    const env = { MCP_URL: "https://mcp.example.com/mcp", MCP_TOKEN: "Bearer s3cret", OPENAI_KEY: "sk-1", ADMIN_PW: "pw" };
    const config = parseConfig(
      {
        auth_config: { is_enabled: true, admin_username: "admin", admin_password: "env.ADMIN_PW" },
        providers: { openai: { keys: [{ id: "k1", name: "main", value: "env.OPENAI_KEY" }] } },
        mcp: {
          client_configs: [
            { name: "docs", connection_type: "http", connection_string: "env.MCP_URL", auth_type: "headers", headers: { Authorization: "env.MCP_TOKEN" } },
          ],
        },
      },
      env,
    );
    assert.equal(config.authConfig.adminPassword, "pw");
    assert.deepEqual(config.providers["openai"]?.["keys"], [{ id: "k1", name: "main", value: "sk-1" }]);
    assert.equal(config.mcp.clientConfigs[0]?.connectionString, "https://mcp.example.com/mcp");
    assert.deepEqual(config.mcp.clientConfigs[0]?.headers, { Authorization: "Bearer s3cret" });
  });

  test("names the path and the variable when a variable is not set", () => {
    assertRejected(
      { providers: { openai: { keys: [{ id: "k1", name: "main", value: "env.OPENAI_KEY" }] } } },
      "providers.openai.keys[0].value",
      'environment variable OPENAI_KEY is not set (referenced as "env.OPENAI_KEY")',
    );
  });

  test("reports only the missing variable, not the unresolved text, for a URL field", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, connection_string: "env.MCP_URL" }), "mcp.client_configs[0].connection_string", "environment variable MCP_URL is not set");
  });

  test("validates the resolved value, not the reference", () => {
    assertRejected(
      withClients({ ...HTTP_CLIENT, connection_string: "env.MCP_URL" }),
      "mcp.client_configs[0].connection_string",
      "must be an http:// or https:// URL",
      { MCP_URL: "ftp://files.example.com" },
    );
  });

  test("accepts a variable set to the empty string", () => {
    assert.equal(parseConfig({ client: { mcp_external_client_url: "env.EXTERNAL_URL" } }, { EXTERNAL_URL: "" }).client.mcpExternalClientUrl, "");
  });

  test("rejects a reference whose name is not a variable name", () => {
    assertRejected({ database: { url: "env.DB-URL" } }, "database.url", '"env.DB-URL" is not a valid environment variable reference');
  });

  test("leaves object keys alone", () => {
    const resolved = resolveEnvRefs({ "env.A": "env.A" }, { A: "x" });
    assert.deepEqual(resolved, { value: { "env.A": "x" }, issues: [] });
  });

  test("reports an unset variable at its path from resolveEnvRefs", () => {
    const resolved = resolveEnvRefs({ list: ["ok", "env.NOPE"] }, {});
    assert.deepEqual(resolved.issues.map((issue) => issue.path), [["list", 1]]);
  });

  test("leaves strings without the prefix unchanged", () => {
    assert.deepEqual(resolveEnvRefs({ a: "environment", b: 3, c: null }, {}).value, { a: "environment", b: 3, c: null });
  });
});

describe("server", () => {
  test("parses every limit", () => {
    const file = { server: { max_header_bytes: 8192, headers_timeout: "5s", request_timeout: "1m", keep_alive_timeout: "10s", max_connections: 500 } };
    assert.deepEqual(parseConfig(file, {}).server, {
      maxHeaderBytes: 8192,
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 60_000,
      keepAliveTimeoutMs: 10_000,
      maxConnections: 500,
    });
  });

  test("accepts a request_timeout of 0 as no limit", () => {
    assert.equal(parseConfig({ server: { request_timeout: "0" } }, {}).server.requestTimeoutMs, 0);
  });

  test("rejects a request_timeout shorter than headers_timeout", () => {
    assertRejected({ server: { headers_timeout: "10s", request_timeout: "5s" } }, "server.request_timeout", "must be at least server.headers_timeout");
  });

  test("rejects a header limit below 1024 bytes", () => {
    assertRejected({ server: { max_header_bytes: 10 } }, "server.max_header_bytes", "must be at least 1024");
  });

  test("rejects a max_connections of zero", () => {
    assertRejected({ server: { max_connections: 0 } }, "server.max_connections", "");
  });

  test("rejects an unknown key in the server section", () => {
    assertRejected({ server: { idle_timeout: "1s" } }, "server.idle_timeout", "unknown key; allowed keys: max_header_bytes");
  });
});

describe("auth_config", () => {
  test("requires admin_username and admin_password when enabled", () => {
    assert.deepEqual(configErrorLines({ auth_config: { is_enabled: true } }), [
      "config error at auth_config.admin_username: is required when is_enabled is true",
      "config error at auth_config.admin_password: is required when is_enabled is true",
    ]);
  });

  test("treats an empty admin_password as missing when enabled", () => {
    assertRejected({ auth_config: { is_enabled: true, admin_username: "admin", admin_password: "" } }, "auth_config.admin_password", "is required");
  });

  test("does not require credentials when disabled", () => {
    assert.equal(parseConfig({ auth_config: { is_enabled: false } }, {}).authConfig.isEnabled, false);
  });

  test("parses session_ttl as a duration", () => {
    assert.equal(parseConfig({ auth_config: { session_ttl: "1h" } }, {}).authConfig.sessionTtlMs, 3_600_000);
  });

  test("rejects a session_ttl of zero", () => {
    assertRejected({ auth_config: { session_ttl: "0s" } }, "auth_config.session_ttl", "must be greater than 0");
  });

  test("rejects a malformed session_ttl", () => {
    assertRejected({ auth_config: { session_ttl: "1 day" } }, "auth_config.session_ttl", 'invalid duration "1 day"');
  });

  test("rejects a non-boolean is_enabled", () => {
    assertRejected({ auth_config: { is_enabled: "yes" } }, "auth_config.is_enabled", "must be true or false, got a string");
  });
});

describe("client", () => {
  for (const mode of ["both", "oauth"]) {
    test(`accepts mcp_server_auth_mode "${mode}"`, () => {
      assert.equal(parseConfig({ client: { mcp_server_auth_mode: mode } }, {}).client.mcpServerAuthMode, mode);
    });
  }

  test("refuses an unknown mcp_server_auth_mode", () => {
    assertRejected({ client: { mcp_server_auth_mode: "cookies" } }, "client.mcp_server_auth_mode", `must be "headers", "both" or "oauth"`);
  });

  test("parses mcp_relay_request_timeout as a duration from 1s to 24h", () => {
    for (const [text, ms] of [["1s", 1_000], ["90s", 90_000], ["24h", 86_400_000]] as const) {
      assert.equal(parseConfig({ client: { mcp_relay_request_timeout: text } }, {}).client.mcpRelayRequestTimeoutMs, ms);
    }
  });

  for (const [value, message] of [
    ["999ms", 'must be at least 1s (got "999ms")'],
    ["0", 'must be at least 1s (got "0")'],
    ["-1m", 'must be at least 1s (got "-1m")'],
    ["25h", 'must be at most 24h (got "25h")'],
    ["soon", 'invalid duration "soon"'],
    [600, 'must be a duration string such as "10m", got 600'],
  ] as const) {
    test(`rejects an mcp_relay_request_timeout of ${JSON.stringify(value)}`, () => {
      assertRejected({ client: { mcp_relay_request_timeout: value } }, "client.mcp_relay_request_timeout", message);
    });
  }

  test("rejects an allowed_hosts entry with a port", () => {
    assertRejected({ client: { allowed_hosts: ["gw.test:8080"] } }, "client.allowed_hosts[0]", '"gw.test:8080" is not a host name');
  });

  test("rejects an allowed_origins entry that is not an origin", () => {
    assertRejected({ client: { allowed_origins: ["app.example.test"] } }, "client.allowed_origins[0]", '"app.example.test" is not an origin');
  });

  test("reads allowed_hosts, allowed_origins and mcp_disable_auto_tool_inject", () => {
    const client = parseConfig({ client: { allowed_hosts: ["gw.test"], allowed_origins: ["https://a.test"], mcp_disable_auto_tool_inject: true } }, {}).client;
    assert.deepEqual([client.allowedHosts, client.allowedOrigins, client.mcpDisableAutoToolInject], [["gw.test"], ["https://a.test"], true]);
  });

  test("accepts an initial_pool_size of zero", () => {
    assert.equal(parseConfig({ client: { initial_pool_size: 0 } }, {}).client.initialPoolSize, 0);
  });

  test("rejects a negative initial_pool_size", () => {
    assertRejected({ client: { initial_pool_size: -1 } }, "client.initial_pool_size", "must be at least 0");
  });

  test("rejects an allowed_headers entry with a star inside it", () => {
    assertRejected({ client: { allowed_headers: ["x-*-id"] } }, "client.allowed_headers[0]", '"x-*-id" is not a header name, a prefix ending in "*"');
  });

  test("rejects an empty allowed_headers entry", () => {
    assertRejected({ client: { allowed_headers: ["x-team", ""] } }, "client.allowed_headers[1]", `"" is not a header name`);
  });

  test("rejects a fractional initial_pool_size", () => {
    assertRejected({ client: { initial_pool_size: 2.5 } }, "client.initial_pool_size", "must be an integer");
  });

  test("rejects a negative max_request_body_bytes", () => {
    assertRejected({ client: { max_request_body_bytes: -1 } }, "client.max_request_body_bytes", "must be greater than 0");
  });

  test("rejects a non-boolean drop_excess_requests", () => {
    assertRejected({ client: { drop_excess_requests: 1 } }, "client.drop_excess_requests", "must be true or false, got 1");
  });

  test("rejects a prometheus_labels that is not a list of strings", () => {
    assertRejected({ client: { prometheus_labels: ["team", 7] } }, "client.prometheus_labels[1]", "must be a string, got 7");
  });

  test("rejects an mcp_external_client_url that is not http(s)", () => {
    assertRejected({ client: { mcp_external_client_url: "ftp://gw.example.com" } }, "client.mcp_external_client_url", "must be an http:// or https:// URL");
  });

  test("rejects an mcp_external_client_url that is not a URL", () => {
    assertRejected({ client: { mcp_external_client_url: "gw.example.com" } }, "client.mcp_external_client_url", "must be an http:// or https:// URL");
  });

  test("accepts an https mcp_external_client_url", () => {
    assert.equal(
      parseConfig({ client: { mcp_external_client_url: "https://gw.example.com" } }, {}).client.mcpExternalClientUrl,
      "https://gw.example.com",
    );
  });

  test("reads enforce_governance", () => {
    assert.equal(parseConfig({ client: { enforce_governance: true } }, {}).client.enforceGovernance, true);
  });
});

describe("mcp.client_configs", () => {
  test("rejects a client name the MCP endpoint's own paths take", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, name: "sse" }), "mcp.client_configs[0].name", '"sse" is reserved');
    assertRejected(withClients({ ...HTTP_CLIENT, name: "messages" }), "mcp.client_configs[0].name", '"messages" is reserved');
  });

  test("rejects a hyphen in the client name", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, name: "my-docs" }), "mcp.client_configs[0].name", "must not contain a hyphen");
  });

  test("rejects an empty client name", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, name: "" }), "mcp.client_configs[0].name", "must not be empty");
  });

  test("rejects a missing client name", () => {
    const { name: _name, ...unnamed } = HTTP_CLIENT;
    assertRejected(withClients(unnamed), "mcp.client_configs[0].name", "is required");
  });

  test("rejects a duplicate client name at the second one", () => {
    assertRejected(
      withClients(HTTP_CLIENT, { ...HTTP_CLIENT, name: "other" }, HTTP_CLIENT),
      "mcp.client_configs[2].name",
      'duplicate client name "docs" (first declared at mcp.client_configs[0])',
    );
  });

  test("rejects a missing connection_type", () => {
    assertRejected(withClients({ name: "docs" }), "mcp.client_configs[0].connection_type", "is required");
  });

  test("rejects an unknown connection_type", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, connection_type: "ws" }), "mcp.client_configs[0].connection_type", 'expected one of "http", "sse", "stdio", got "ws"');
  });

  test("requires connection_string for http", () => {
    assertRejected(withClients({ name: "docs", connection_type: "http" }), "mcp.client_configs[0].connection_string", 'is required when connection_type is "http"');
  });

  test("requires connection_string for sse", () => {
    assertRejected(withClients({ name: "docs", connection_type: "sse" }), "mcp.client_configs[0].connection_string", 'is required when connection_type is "sse"');
  });

  test("rejects a connection_string that is not a URL", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, connection_string: "localhost:9000" }), "mcp.client_configs[0].connection_string", "must be an http:// or https:// URL");
  });

  test("requires stdio_config for stdio", () => {
    assertRejected(withClients({ name: "fs", connection_type: "stdio" }), "mcp.client_configs[0].stdio_config", 'is required when connection_type is "stdio"');
  });

  test("requires stdio_config.command", () => {
    assertRejected(withClients({ name: "fs", connection_type: "stdio", stdio_config: { args: [] } }), "mcp.client_configs[0].stdio_config.command", "is required");
  });

  test("rejects stdio_config.envs that is not a list of strings", () => {
    assertRejected(
      withClients({ name: "fs", connection_type: "stdio", stdio_config: { command: "npx", envs: "HOME" } }),
      "mcp.client_configs[0].stdio_config.envs",
      "expected an array, got a string",
    );
  });

  test("rejects an unknown auth_type", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, auth_type: "basic" }), "mcp.client_configs[0].auth_type", "expected one of");
  });

  test("takes headers as plain strings", () => {
    assert.deepEqual(onlyClient({ ...HTTP_CLIENT, auth_type: "headers", headers: { "X-Api-Key": "k" } }).headers, { "X-Api-Key": "k" });
  });

  test("rejects a header written in the API's {value} form", () => {
    assertRejected(
      withClients({ ...HTTP_CLIENT, headers: { "X-Api-Key": { value: "k" } } }),
      "mcp.client_configs[0].headers.X-Api-Key",
      'must be a plain string: in the config file write "Header-Name": "value"',
    );
  });

  test("quotes a header name that would make the path ambiguous", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, headers: { "a.b": 1 } }), 'mcp.client_configs[0].headers["a.b"]', "must be a string, got 1");
  });

  test("reads the tool lists and per-user header keys", () => {
    const client = onlyClient({
      ...HTTP_CLIENT,
      auth_type: "per_user_headers",
      per_user_header_keys: ["X-User-Token"],
      tools_to_execute: ["*"],
      tools_to_auto_execute: ["search"],
      needs_session_stickiness: true,
      disabled: true,
    });
    assert.deepEqual(client.perUserHeaderKeys, ["X-User-Token"]);
    assert.deepEqual(client.toolsToExecute, ["*"]);
    assert.deepEqual(client.toolsToAutoExecute, ["search"]);
    assert.equal(client.needsSessionStickiness, true);
    assert.equal(client.disabled, true);
  });

  test("rejects a non-string tool in tools_to_execute", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, tools_to_execute: [1] }), "mcp.client_configs[0].tools_to_execute[0]", "expected a string, got 1");
  });

  test("leaves cross-field rules to the MCP domain", () => {
    // Each of these breaks a rule the MCP domain enforces; the file layer must pass them through.
    const config = parseConfig(
      withClients(
        { name: "fs", connection_type: "stdio", stdio_config: { command: "npx" }, auth_type: "headers" },
        { name: "events", connection_type: "sse", connection_string: "http://127.0.0.1:9000/sse", needs_session_stickiness: false },
        { ...HTTP_CLIENT, name: "peruser", auth_type: "per_user_headers", per_user_header_keys: [] },
      ),
      {},
    );
    assert.equal(config.mcp.clientConfigs.length, 3);
  });

  test("reports every problem of a file in one error", () => {
    const lines = configErrorLines(
      withClients({ name: "my-docs", connection_type: "http" }, { name: "fs", connection_type: "stdio", extra: true }),
    );
    assert.deepEqual(lines.map((line) => line.slice(0, line.indexOf(": "))), [
      "config error at mcp.client_configs[0].name",
      "config error at mcp.client_configs[0].connection_string",
      "config error at mcp.client_configs[1].extra",
      "config error at mcp.client_configs[1].stdio_config",
    ]);
  });

  test("sets the error field to the path of the first problem", () => {
    assert.throws(
      () => parseConfig(withClients({ ...HTTP_CLIENT, name: "my-docs" }), {}),
      (error: unknown) => error instanceof GatewayError && error.field === "mcp.client_configs[0].name",
    );
  });
});

describe("tool_sync_interval of a client", () => {
  const interval = (value: unknown) => onlyClient({ ...HTTP_CLIENT, tool_sync_interval: value }).toolSyncInterval;

  test("reads a duration string in minutes", () => assert.equal(interval("10m"), 10));
  test("reads hours as minutes", () => assert.equal(interval("1h"), 60));
  test("rounds a sub-minute interval up to one minute", () => assert.equal(interval("30s"), 1));
  test("rounds a partial minute up", () => assert.equal(interval("90s"), 2));
  test("reads a bare zero string as inherit", () => assert.equal(interval("0"), 0));
  test("reads 0s as inherit", () => assert.equal(interval("0s"), 0));
  test("reads a negative duration as disabled", () => assert.equal(interval("-1m"), -1));
  test("reads a negative number string as disabled", () => assert.equal(interval("-1"), -1));
  test("reads a legacy bare number as nanoseconds", () => assert.equal(interval(600_000_000_000), 10));
  test("reads a legacy bare zero as inherit", () => assert.equal(interval(0), 0));
  test("reads a legacy negative number as disabled", () => assert.equal(interval(-1), -1));
  test("rounds a legacy sub-minute number up to one minute", () => assert.equal(interval(1_000_000_000), 1));

  test("rejects a positive number string without a unit", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, tool_sync_interval: "10" }), "mcp.client_configs[0].tool_sync_interval", '"10" has no unit: write "10m"');
  });

  test("rejects a fractional legacy number", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, tool_sync_interval: 1.5 }), "mcp.client_configs[0].tool_sync_interval", "a bare number is a legacy count of nanoseconds");
  });

  test("rejects a malformed duration", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, tool_sync_interval: "ten minutes" }), "mcp.client_configs[0].tool_sync_interval", 'invalid duration "ten minutes"');
  });

  test("rejects a value that is neither a string nor a number", () => {
    assertRejected(withClients({ ...HTTP_CLIENT, tool_sync_interval: true }), "mcp.client_configs[0].tool_sync_interval", 'must be a duration string such as "10m"');
  });
});

describe("mcp settings", () => {
  test("reads the global tool_sync_interval in minutes", () => {
    assert.equal(parseConfig({ mcp: { tool_sync_interval: "15m" } }, {}).mcp.toolSyncIntervalMinutes, 15);
  });

  test("reads a legacy global tool_sync_interval as nanoseconds", () => {
    assert.equal(parseConfig({ mcp: { tool_sync_interval: 300_000_000_000 } }, {}).mcp.toolSyncIntervalMinutes, 5);
  });

  test("rejects a max_agent_depth below 1", () => {
    assertRejected({ mcp: { tool_manager_config: { max_agent_depth: 0 } } }, "mcp.tool_manager_config.max_agent_depth", "must be at least 1");
  });

  test("rejects a max_agent_depth above 50", () => {
    assertRejected({ mcp: { tool_manager_config: { max_agent_depth: 51 } } }, "mcp.tool_manager_config.max_agent_depth", "must be at most 50");
  });

  test("rejects a tool_execution_timeout of zero", () => {
    assertRejected({ mcp: { tool_manager_config: { tool_execution_timeout: "0s" } } }, "mcp.tool_manager_config.tool_execution_timeout", "must be greater than 0");
  });

  test("rejects a negative tool_execution_timeout", () => {
    assertRejected({ mcp: { tool_manager_config: { tool_execution_timeout: "-5s" } } }, "mcp.tool_manager_config.tool_execution_timeout", "must be greater than 0");
  });

  test("rejects a tool_execution_timeout given as a number", () => {
    assertRejected(
      { mcp: { tool_manager_config: { tool_execution_timeout: 30 } } },
      "mcp.tool_manager_config.tool_execution_timeout",
      'must be a duration string such as "30s", got 30',
    );
  });

  test("rejects a code_mode_binding_level other than server or tool", () => {
    assertRejected({ mcp: { tool_manager_config: { code_mode_binding_level: "module" } } }, "mcp.tool_manager_config.code_mode_binding_level", 'must be one of "server", "tool" (got "module")');
  });
});

describe("providers, governance, pricing and database", () => {
  test("requires a provider key id when the file is seeded, as the API does", () => {
    const config = parseConfig({ providers: { openai: { keys: [{ name: "main" }] } } }, {});
    assert.throws(() => inferenceOptionsFromFile(config.providers, []), { message: /^providers\.openai\.keys\[0\]\.id: is required/ });
  });

  test("rejects a weight that is not a number", () => {
    assertRejected({ providers: { openai: { keys: [{ id: "k", name: "n", weight: true }] } } }, "providers.openai.keys[0].weight", "expected a number, got true");
  });

  test("rejects aliases that do not map to strings", () => {
    assertRejected({ providers: { azure: { keys: [{ id: "k", name: "n", aliases: { gpt4: 4 } }] } } }, "providers.azure.keys[0].aliases.gpt4", "expected a string, got 4");
  });

  test("passes provider-specific key blocks through", () => {
    const config = parseConfig(
      { providers: { azure: { keys: [{ id: "k", name: "n", azure_key_config: { endpoint: "https://a.example.com", api_version: "x" } }] } } },
      {},
    );
    assert.deepEqual(config.providers["azure"]?.["keys"], [{ id: "k", name: "n", azure_key_config: { endpoint: "https://a.example.com", api_version: "x" } }]);
  });

  test("reads network_config.base_url", () => {
    const config = parseConfig({ providers: { openai: { network_config: { base_url: "http://127.0.0.1:9999" } } } }, {});
    assert.deepEqual(config.providers["openai"]?.["network_config"], { base_url: "http://127.0.0.1:9999" });
  });

  test("rejects a base_url that is not http(s) when the file is seeded, as the API does", () => {
    const config = parseConfig({ providers: { openai: { network_config: { base_url: "127.0.0.1:9999" } } } }, {});
    assert.throws(() => inferenceOptionsFromFile(config.providers, []), { message: /^providers\.openai\.network_config\.base_url: / });
  });

  test("accepts every network_config field the API accepts", () => {
    const network = { base_url: "http://127.0.0.1:9999", default_request_timeout_in_seconds: 5, max_retries: 0 };
    const config = parseConfig({ providers: { openai: { network_config: network } } }, {});
    assert.equal(inferenceOptionsFromFile(config.providers, []).providers["openai"]?.["network_config"] !== undefined, true);
  });

  test("rejects a provider entry whose name differs from its key", () => {
    assertRejected({ providers: { openai: { name: "anthropic" } } }, "providers.openai.name", 'is "anthropic" but the entry\'s key is "openai"');
  });

  test("keeps the other fields of a virtual key", () => {
    const key = { id: "vk-a", name: "team-a", value: "sk-gw-1", is_active: true, provider_configs: [{ provider: "openai" }] };
    assert.deepEqual(parseConfig({ governance: { virtual_keys: [key] } }, {}).governance.virtualKeys, [key]);
  });

  test("requires a virtual key id", () => {
    assertRejected({ governance: { virtual_keys: [{ name: "team-a" }] } }, "governance.virtual_keys[0].id", "is required");
  });

  test("rejects a routing rule that is not an object", () => {
    assertRejected({ governance: { routing_rules: ["r1"] } }, "governance.routing_rules[0]", "request body: expected a JSON object, got a string");
  });

  test("rejects a routing rule field the API does not know", () => {
    assertRejected({ governance: { routing_rules: [{ id: "r1", name: "r1", expression: "true" }] } }, "governance.routing_rules[0].expression", "unknown key");
  });

  test("requires a routing rule id", () => {
    assertRejected({ governance: { routing_rules: [{ name: "r1", targets: [{ provider: "openai" }] }] } }, "governance.routing_rules[0].id", "is required");
  });

  test("accepts a file:// pricing_url and a sync_interval", () => {
    const pricing = parseConfig({ pricing: { pricing_url: "file:///data/pricing.json", sync_interval: "6h" } }, {}).pricing;
    assert.deepEqual(pricing, { pricingUrl: "file:///data/pricing.json", syncIntervalMs: 6 * 3_600_000 });
  });

  test("accepts an empty pricing_url", () => {
    assert.equal(parseConfig({ pricing: { pricing_url: "" } }, {}).pricing.pricingUrl, "");
  });

  test("rejects a pricing_url with an unsupported scheme", () => {
    assertRejected({ pricing: { pricing_url: "ftp://x/pricing.json" } }, "pricing.pricing_url", "must be an http://, https:// or file:// URL");
  });

  test("reads a postgres database url", () => {
    assert.equal(parseConfig({ database: { url: "postgres://gw@127.0.0.1:5432/gw" } }, {}).database.url, "postgres://gw@127.0.0.1:5432/gw");
  });

  test("rejects a database url that is not postgres", () => {
    assertRejected({ database: { url: "mysql://127.0.0.1/gw" } }, "database.url", "must be a postgres:// or postgresql:// URL");
  });
});

describe("loadConfigFile", () => {
  let dir = "";

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-config-"));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("reads and resolves a file on disk", async () => {
    const path = join(dir, "ok.json");
    await writeFile(
      path,
      JSON.stringify({
        auth_config: { is_enabled: true, admin_username: "admin", admin_password: "env.GW_ADMIN_PASSWORD" },
        mcp: { client_configs: [{ ...HTTP_CLIENT, tool_sync_interval: "5m" }] },
      }),
    );
    const config = await loadConfigFile(path, { GW_ADMIN_PASSWORD: "pw" });
    assert.equal(config.authConfig.adminPassword, "pw");
    assert.equal(config.mcp.clientConfigs[0]?.toolSyncInterval, 5);
  });

  test("accepts a file that starts with a byte-order mark", async () => {
    const path = join(dir, "bom.json");
    await writeFile(path, `\uFEFF{"client": {"initial_pool_size": 7}}`);
    assert.equal((await loadConfigFile(path, {})).client.initialPoolSize, 7);
  });

  test("rejects a file that is not JSON and names the file", async () => {
    const path = join(dir, "broken.json");
    await writeFile(path, '{\n  "client": {\n    "initial_pool_size": 7,\n  }\n}\n');
    await assert.rejects(loadConfigFile(path, {}), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, "invalid_argument");
      assert.ok(error.message.startsWith(`config file ${path} is not valid JSON: `), error.message);
      assert.match(error.message, /line 4 column 3/);
      return true;
    });
  });

  test("names the file and the field of an invalid file", async () => {
    const path = join(dir, "invalid.json");
    await writeFile(path, JSON.stringify(withClients({ ...HTTP_CLIENT, name: "my-docs" })));
    await assert.rejects(loadConfigFile(path, {}), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, "invalid_argument");
      assert.equal(error.field, "mcp.client_configs[0].name");
      const [header, line] = error.message.split("\n");
      assert.equal(header, `config file ${path} is invalid:`);
      assert.ok(line?.startsWith("config error at mcp.client_configs[0].name: must not contain a hyphen"), line);
      return true;
    });
  });

  test("reports a missing file as not_found and names it", async () => {
    const path = join(dir, "missing.json");
    await assert.rejects(loadConfigFile(path, {}), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, "not_found");
      assert.ok(error.message.startsWith(`cannot read config file ${path}: `), error.message);
      return true;
    });
  });
});

describe("load_balancer_config", () => {
  test("reads the toggles it sets and defaults the others", () => {
    const { loadBalancer } = parseConfig({ load_balancer_config: { prune_failed_fallbacks: true, route_selection_enabled: false } }, {});
    assert.equal(loadBalancer.pruneFailedFallbacks, true);
    assert.equal(loadBalancer.routeSelectionEnabled, false);
    assert.equal(loadBalancer.directionSelectionEnabled, true);
  });

  test("refuses a toggle it does not know, naming it", () => {
    assert.throws(
      () => parseConfig({ load_balancer_config: { circuit_breaker: true } }, {}),
      (error: unknown) => error instanceof GatewayError && error.field === "load_balancer_config.circuit_breaker",
    );
  });
});

describe("cache", () => {
  test("reads the embedding model of semantic caching", () => {
    assert.deepEqual(parseConfig({ cache: { embedding: { provider: "openai", model: "text-embedding-3-small" } } }, {}).cache, {
      embedding: { provider: "openai", model: "text-embedding-3-small" },
    });
  });

  test("an embedding without a model is refused naming it", () => {
    assertRejected({ cache: { embedding: { provider: "openai" } } }, "cache.embedding.model", "");
  });

  test("a virtual key's cache threshold out of range is refused naming it", () => {
    const config = parseConfig({ governance: { virtual_keys: [{ id: "vk", name: "vk", value: "sk-gw-vk", cache: { mode: "direct", threshold: 2 } }] } }, {});
    assert.throws(() => inferenceOptionsFromFile(config.providers, config.governance.virtualKeys), { message: /^governance\.virtual_keys\[0\]\.cache\.threshold: must be a number more than 0 and at most 1/ });
  });
});

describe("sso", () => {
  test("fills the defaults of a configured issuer and lower-cases admin emails", () => {
    const { sso } = parseConfig({ sso: { issuer: "https://idp.example.com", client_id: "gw", admin_emails: ["Root@Example.com"] } }, {});
    assert.deepEqual(sso, {
      issuer: "https://idp.example.com",
      clientId: "gw",
      clientSecret: "",
      scopes: ["openid", "email", "profile"],
      adminEmails: ["root@example.com"],
      adminGroupClaim: "groups",
      adminGroups: [],
    });
  });

  test("refuses an issuer without client_id, naming the field", () => {
    assert.throws(() => parseConfig({ sso: { issuer: "https://idp.example.com" } }, {}), (error: unknown) => error instanceof GatewayError && /sso\.client_id/.test(error.message));
  });

  test("refuses an issuer that is not an http(s) URL", () => {
    assert.throws(() => parseConfig({ sso: { issuer: "idp.example.com", client_id: "gw" } }, {}), (error: unknown) => error instanceof GatewayError && /sso\.issuer/.test(error.message));
  });

  test("refuses an unknown key, listing the allowed ones", () => {
    assert.throws(() => parseConfig({ sso: { issuer: "https://idp.example.com", client_id: "gw", audiences: [] } }, {}), { message: /allowed keys: issuer, client_id/ });
  });

  test("refuses admin settings without an issuer rather than ignoring them", () => {
    assert.throws(() => parseConfig({ sso: { admin_emails: ["a@example.com"] } }, {}), { message: /sso\.admin_emails/ });
  });
});

describe("token_exchange clients", () => {
  test("reads the token_exchange block in the API's names, with rfc8693 by default", () => {
    const parsed = onlyClient({
      ...HTTP_CLIENT,
      auth_type: "token_exchange",
      token_exchange: { audience: "https://api.example.com", client_id: "gw", client_secret: "env.TE_SECRET", scopes: ["a", "b"] },
    }, { TE_SECRET: "s3cret" });
    assert.deepEqual(parsed.tokenExchange, {
      audience: "https://api.example.com",
      clientId: "gw",
      clientSecret: "s3cret",
      authorizationServerUrl: "",
      scopes: ["a", "b"],
      grantStyle: "rfc8693",
    });
  });

  test("refuses an unknown field inside token_exchange, naming its path", () => {
    assert.throws(
      () => onlyClient({ ...HTTP_CLIENT, auth_type: "token_exchange", token_exchange: { audience: "x", client_id: "gw", audiences: [] } }),
      { message: /mcp\.client_configs\[0\]\.token_exchange\.audiences/ },
    );
  });
});
