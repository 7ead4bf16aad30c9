/** Settings: the external URL, temp-token links, governance enforcement, the MCP relay's wait for clients, agent-mode limits, and the cache and tracing status. */
import { useEffect, useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { SettingsService } from "../../../gen/gw/admin/v1/settings_pb";
import { Button, Card, ErrorBox, Page, Switch, TextField } from "../ui/kit";

/** The settings page. */
export function SettingsPage() {
  const config = useQuery(SettingsService.method.getConfig, {}, { refetchInterval: false });
  const tools = useQuery(SettingsService.method.getToolManagerConfig, {}, { refetchInterval: false });
  const qc = useQueryClient();
  const saveConfig = useMutation(SettingsService.method.updateConfig, { onSuccess: () => qc.invalidateQueries() });
  const saveTools = useMutation(SettingsService.method.updateToolManagerConfig, { onSuccess: () => qc.invalidateQueries() });
  const client = config.data?.config?.client;
  const [url, setUrl] = useState("");
  const [temp, setTemp] = useState(false);
  const [enforce, setEnforce] = useState(false);
  const [relayTimeout, setRelayTimeout] = useState("");
  const [depth, setDepth] = useState("");
  const [timeout, setTimeoutText] = useState("");
  useEffect(() => {
    if (!client) return;
    setUrl(client.mcpExternalClientUrl);
    setTemp(client.mcpEnableTempTokenAuth);
    setEnforce(client.enforceGovernance);
    setRelayTimeout(client.mcpRelayRequestTimeout);
  }, [client]);
  useEffect(() => {
    if (!tools.data?.config) return;
    setDepth(String(tools.data.config.maxAgentDepth));
    setTimeoutText(tools.data.config.toolExecutionTimeout);
  }, [tools.data]);
  const submitClient = (e: FormEvent) => {
    e.preventDefault();
    saveConfig.mutate({
      config: { client: { mcpExternalClientUrl: url, mcpEnableTempTokenAuth: temp, enforceGovernance: enforce, mcpRelayRequestTimeout: relayTimeout } },
      updateMask: { paths: ["client.mcp_external_client_url", "client.mcp_enable_temp_token_auth", "client.enforce_governance", "client.mcp_relay_request_timeout"] },
    });
  };
  const submitTools = (e: FormEvent) => {
    e.preventDefault();
    saveTools.mutate({ config: { maxAgentDepth: Number.parseInt(depth, 10), toolExecutionTimeout: timeout }, updateMask: { paths: ["max_agent_depth", "tool_execution_timeout"] } });
  };
  return (
    <Page title="Settings">
      <Card title="Gateway">
        <ErrorBox error={config.error} />
        {client && (
          <form onSubmit={submitClient} className="space-y-3">
            <TextField label="External URL" value={url} onChange={setUrl} hint="Public base URL of submission links; empty uses the address the caller used." />
            <Switch label="Add a temp token to credential links" checked={temp} onChange={setTemp} />
            <div>
              <Switch label="Refuse /v1 requests without a virtual key" checked={enforce} onChange={setEnforce} />
            </div>
            <TextField
              label="MCP client answer timeout"
              value={relayTimeout}
              onChange={setRelayTimeout}
              hint='How long a relayed sampling, elicitation or roots request of an MCP server waits for the MCP client: a duration from "1s" to "24h", such as "10m".'
            />
            <ErrorBox error={saveConfig.error} />
            {saveConfig.isSuccess && <p role="status" className="text-sm">Saved.</p>}
            <Button type="submit" tone="primary" disabled={saveConfig.isPending}>
              Save gateway settings
            </Button>
          </form>
        )}
      </Card>
      <StatusCards />
      <Card title="Agent mode">
        <ErrorBox error={tools.error} />
        {tools.data && (
          <form onSubmit={submitTools} className="grid gap-3 md:grid-cols-2">
            <TextField label="Maximum agent depth" value={depth} onChange={setDepth} hint="1 to 50." />
            <TextField label="Tool execution timeout" value={timeout} onChange={setTimeoutText} hint='A duration such as "30s".' />
            <div className="md:col-span-2">
              <ErrorBox error={saveTools.error} />
              {saveTools.isSuccess && <p role="status" className="text-sm">Saved.</p>}
              <Button type="submit" tone="primary" disabled={saveTools.isPending}>
                Save agent settings
              </Button>
            </div>
          </form>
        )}
      </Card>
    </Page>
  );
}

/** A label and its value in a status list. */
function Row(props: { label: string; value: string }) {
  return (
    <div className="flex flex-wrap gap-x-2">
      <dt className="font-medium">{props.label}:</dt>
      <dd className="break-all">{props.value}</dd>
    </div>
  );
}

/** The response cache and tracing as this node runs them (read-only). */
function StatusCards() {
  const status = useQuery(SettingsService.method.getStatus, {}, { refetchInterval: false });
  const cache = status.data?.cache;
  const tracing = status.data?.tracing;
  return (
    <div className="grid gap-3 md:grid-cols-2">
      <Card title="Response cache">
        <ErrorBox error={status.error} />
        {cache && (
          <dl className="space-y-1 text-sm" data-testid="cache-status">
            <Row label="Status" value={cache.enabled ? "on" : "off"} />
            <Row label="Semantic lookups" value={cache.semanticAvailable ? "available" : `unavailable: ${cache.semanticProblem}`} />
            <Row label="Virtual keys with a cache" value={String(cache.keysWithCache)} />
          </dl>
        )}
      </Card>
      <Card title="Tracing">
        {tracing && (
          <div className="space-y-1 text-sm" data-testid="tracing-status">
            <dl className="space-y-1">
              <Row label="Status" value={tracing.enabled ? "on" : "off"} />
              {tracing.enabled && (
                <>
                  <Row label="Exporter endpoint" value={tracing.endpoint} />
                  <Row label="Headers" value={tracing.headerNames.length === 0 ? "none" : tracing.headerNames.join(", ")} />
                  <Row label="Service name" value={tracing.serviceName} />
                  <Row label="Sampler" value={`${tracing.sampler}, ratio ${tracing.sampleRatio}`} />
                  <Row label="Prompt and completion text" value={tracing.captureContent ? "recorded" : "not recorded"} />
                </>
              )}
            </dl>
            {!tracing.enabled && (
              <p className="text-slate-700">
                Set <code>OTEL_EXPORTER_OTLP_ENDPOINT</code> or <code>telemetry.otlp.endpoint</code> in the config file and restart to export traces.
              </p>
            )}
          </div>
        )}
      </Card>
    </div>
  );
}
