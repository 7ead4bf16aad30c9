/** Settings: the external URL, temp-token links, governance enforcement and agent-mode limits. */
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
  const [depth, setDepth] = useState("");
  const [timeout, setTimeoutText] = useState("");
  useEffect(() => {
    if (!client) return;
    setUrl(client.mcpExternalClientUrl);
    setTemp(client.mcpEnableTempTokenAuth);
    setEnforce(client.enforceGovernance);
  }, [client]);
  useEffect(() => {
    if (!tools.data?.config) return;
    setDepth(String(tools.data.config.maxAgentDepth));
    setTimeoutText(tools.data.config.toolExecutionTimeout);
  }, [tools.data]);
  const submitClient = (e: FormEvent) => {
    e.preventDefault();
    saveConfig.mutate({
      config: { client: { mcpExternalClientUrl: url, mcpEnableTempTokenAuth: temp, enforceGovernance: enforce } },
      updateMask: { paths: ["client.mcp_external_client_url", "client.mcp_enable_temp_token_auth", "client.enforce_governance"] },
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
            <ErrorBox error={saveConfig.error} />
            {saveConfig.isSuccess && <p role="status" className="text-sm">Saved.</p>}
            <Button type="submit" tone="primary" disabled={saveConfig.isPending}>
              Save gateway settings
            </Button>
          </form>
        )}
      </Card>
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
