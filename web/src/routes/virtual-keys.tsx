/** Virtual keys: create (value shown once), provider and MCP access, usage bars, deactivate, delete. */
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { GovernanceService, type UsageWindow, type VirtualKey } from "../../../gen/gw/routing/v1/governance_pb";
import { ProviderService } from "../../../gen/gw/catalog/v1/catalog_pb";
import { McpClientService } from "../../../gen/gw/admin/v1/mcp_client_pb";
import { splitList } from "../ui/lines";
import { Badge, Button, Card, Empty, ErrorBox, Page, Switch, Table, Td, TextField, UsageBar } from "../ui/kit";

/** The virtual keys page. */
export function VirtualKeysPage() {
  const list = useQuery(GovernanceService.method.listVirtualKeys, {});
  const [creating, setCreating] = useState(false);
  const keys = list.data?.virtualKeys ?? [];
  return (
    <Page title="Virtual keys" actions={<Button tone="primary" onClick={() => setCreating(!creating)}>{creating ? "Close form" : "Create virtual key"}</Button>}>
      {creating && <CreateKey />}
      <ErrorBox error={list.error} />
      {list.isSuccess && keys.length === 0 && <Empty>No virtual keys yet. Create one to give a caller its own providers, MCP tools, budget and limits.</Empty>}
      {keys.length > 0 && (
        <Table caption="Virtual keys" head={["Name", "State", "Providers", "MCP clients", "Usage", "Actions"]}>
          {keys.map((k) => (
            <KeyRow key={k.id} vk={k} />
          ))}
        </Table>
      )}
    </Page>
  );
}

/** A fresh secret in the form the gateway generates (sk-gw- and 24 random bytes, base64url). */
function newKeyValue(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  const base64 = btoa(String.fromCharCode(...bytes));
  return `sk-gw-${base64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** One key with its usage and actions. */
function KeyRow(props: { vk: VirtualKey }) {
  const k = props.vk;
  const qc = useQueryClient();
  const refresh = () => qc.invalidateQueries();
  const usage = useQuery(GovernanceService.method.getVirtualKeyUsage, { id: k.id });
  const update = useMutation(GovernanceService.method.updateVirtualKey, { onSuccess: refresh });
  const remove = useMutation(GovernanceService.method.deleteVirtualKey, { onSuccess: refresh });
  const [rotated, setRotated] = useState<string | null>(null);
  const rotate = useMutation(GovernanceService.method.updateVirtualKey, { onSuccess: refresh });
  const rotateNow = () => {
    const value = newKeyValue();
    rotate.mutate({ id: k.id, virtualKey: { value }, updateMask: { paths: ["value"] } }, { onSuccess: () => setRotated(value) });
  };
  const active = k.isActive !== false;
  const own = usage.data?.levels.find((l) => l.level === "virtual_key");
  const bars: [string, UsageWindow | undefined, string][] = [
    ["Budget", own?.budget, " USD"],
    ["Requests", own?.requests, ""],
    ["Tokens", own?.tokens, ""],
  ];
  return (
    <tr>
      <Td>
        <span className="font-medium">{k.name}</span>
        <div className="font-mono text-xs text-slate-700">{k.id}</div>
      </Td>
      <Td>
        <Badge state={active ? "active" : "inactive"} />
      </Td>
      <Td>{k.providerConfigs.length === 0 ? "none (blocked)" : k.providerConfigs.map((p) => `${p.provider} (${p.allowedModels.join(", ") || "no models"})`).join("; ")}</Td>
      <Td>{k.mcpConfigs === undefined ? "all visible" : k.mcpConfigs.values.length === 0 ? "none" : k.mcpConfigs.values.map((m) => m.mcpClientName).join(", ")}</Td>
      <Td>
        <div className="min-w-40 space-y-1">
          {bars.map(([label, w, unit]) => w && <UsageBar key={label} label={label} used={w.used} max={w.maxLimit} unit={unit} />)}
          {own === undefined || (!own.budget && !own.requests && !own.tokens) ? <span className="text-xs text-slate-700">no limits set</span> : null}
        </div>
      </Td>
      <Td>
        <div className="flex flex-wrap gap-2">
          <Switch label="Active" checked={active} onChange={(on) => update.mutate({ id: k.id, virtualKey: { isActive: on }, updateMask: { paths: ["is_active"] } })} />
          <Button confirm={`Rotate the virtual key ${k.name}? Its current value stops working at once.`} onClick={rotateNow}>
            Rotate
          </Button>
          <Button tone="danger" confirm={`Delete the virtual key ${k.name}? Callers using it are refused at once.`} onClick={() => remove.mutate({ id: k.id })}>
            Delete
          </Button>
        </div>
        {rotated !== null && (
          <div className="mt-2 text-sm">
            New value, shown only now:
            <p className="my-1 break-all rounded bg-slate-100 p-2 font-mono" data-testid="rotated-key-value">
              {rotated}
            </p>
            <Button onClick={() => setRotated(null)}>Done</Button>
          </div>
        )}
        <ErrorBox error={update.error ?? remove.error ?? rotate.error ?? usage.error} />
      </Td>
    </tr>
  );
}

/** The create form: name, providers, MCP clients, budget and limits; the value is shown once afterwards. */
function CreateKey() {
  const qc = useQueryClient();
  const providers = useQuery(ProviderService.method.listProviders, {}, { refetchInterval: false });
  const clients = useQuery(McpClientService.method.listMcpClients, {}, { refetchInterval: false });
  const [name, setName] = useState("");
  const [chosen, setChosen] = useState<Record<string, string>>({});
  const [mcp, setMcp] = useState<Record<string, string>>({});
  const [mcpAll, setMcpAll] = useState(true);
  const [budget, setBudget] = useState({ max: "", reset: "1M" });
  const [limits, setLimits] = useState({ requests: "", requestReset: "1m", tokens: "", tokenReset: "1h" });
  const create = useMutation(GovernanceService.method.createVirtualKey, { onSuccess: () => qc.invalidateQueries() });
  const [formError, setFormError] = useState<Error | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setFormError(null);
    for (const [label, text] of [["Request limit", limits.requests], ["Token limit", limits.tokens]] as const) {
      if (text !== "" && !/^\d+$/.test(text)) {
        setFormError(new Error(`${label} must be a whole number`));
        return;
      }
    }
    create.mutate({
      virtualKey: {
        name,
        providerConfigs: Object.entries(chosen).map(([provider, models]) => ({ provider, allowedModels: splitList(models), keyIds: ["*"] })),
        ...(mcpAll ? {} : { mcpConfigs: { values: Object.entries(mcp).map(([mcpClientName, tools]) => ({ mcpClientName, toolsToExecute: splitList(tools) })) } }),
        ...(budget.max !== "" ? { budget: { maxLimit: Number(budget.max), resetDuration: budget.reset } } : {}),
        ...(limits.requests !== "" || limits.tokens !== ""
          ? {
              rateLimit: {
                ...(limits.requests !== "" ? { requestMaxLimit: BigInt(limits.requests), requestResetDuration: limits.requestReset } : {}),
                ...(limits.tokens !== "" ? { tokenMaxLimit: BigInt(limits.tokens), tokenResetDuration: limits.tokenReset } : {}),
              },
            }
          : {}),
      },
    });
  };
  if (create.data?.virtualKey) {
    const vk = create.data.virtualKey;
    return (
      <Card title={`Key ${vk.name} created`}>
        <p className="text-sm">Copy the value now: it is shown only this once.</p>
        <p className="my-2 break-all rounded bg-slate-100 p-2 font-mono text-sm" data-testid="new-key-value">
          {vk.value}
        </p>
        <Button onClick={() => void navigator.clipboard?.writeText(vk.value)}>Copy value</Button>{" "}
        <Button onClick={() => create.reset()}>Done</Button>
      </Card>
    );
  }
  return (
    <Card title="Create a virtual key">
      <form onSubmit={submit} className="space-y-3">
        <TextField label="Name" value={name} onChange={setName} required />
        <fieldset className="rounded border border-slate-200 p-2">
          <legend className="px-1 text-sm font-medium">Providers (none chosen: every request is refused)</legend>
          {(providers.data?.providers ?? []).length === 0 && <p className="text-sm text-slate-700">No providers configured yet: add one under Providers &amp; models.</p>}
          {(providers.data?.providers ?? []).map((p) => (
            <div key={p.name} className="flex flex-wrap items-end gap-2 py-1">
              <Switch
                label={p.name}
                checked={chosen[p.name] !== undefined}
                onChange={(on) => {
                  const next = { ...chosen };
                  if (on) next[p.name] = "*";
                  else delete next[p.name];
                  setChosen(next);
                }}
              />
              {chosen[p.name] !== undefined && <TextField label={`Models allowed on ${p.name}`} value={chosen[p.name] ?? ""} onChange={(v) => setChosen({ ...chosen, [p.name]: v })} hint='Comma-separated, or "*" for all.' />}
            </div>
          ))}
          <ErrorBox error={providers.error} />
        </fieldset>
        <fieldset className="rounded border border-slate-200 p-2">
          <legend className="px-1 text-sm font-medium">MCP clients</legend>
          <Switch label="Every client a caller without a key sees" checked={mcpAll} onChange={setMcpAll} />
          {!mcpAll &&
            (clients.data?.clients ?? []).map((c) => (
              <div key={c.clientId} className="flex flex-wrap items-end gap-2 py-1">
                <Switch
                  label={c.name}
                  checked={mcp[c.name] !== undefined}
                  onChange={(on) => {
                    const next = { ...mcp };
                    if (on) next[c.name] = "*";
                    else delete next[c.name];
                    setMcp(next);
                  }}
                />
                {mcp[c.name] !== undefined && <TextField label={`Tools of ${c.name}`} value={mcp[c.name] ?? ""} onChange={(v) => setMcp({ ...mcp, [c.name]: v })} hint='Comma-separated, or "*" for all.' />}
              </div>
            ))}
        </fieldset>
        <div className="grid gap-3 md:grid-cols-3">
          <TextField label="Budget (USD)" value={budget.max} onChange={(v) => setBudget({ ...budget, max: v })} hint="Empty: no budget." />
          <TextField label="Budget window" value={budget.reset} onChange={(v) => setBudget({ ...budget, reset: v })} hint="1h, 1d, 1M…" />
          <span />
          <TextField label="Request limit" value={limits.requests} onChange={(v) => setLimits({ ...limits, requests: v })} />
          <TextField label="Request window" value={limits.requestReset} onChange={(v) => setLimits({ ...limits, requestReset: v })} />
          <span />
          <TextField label="Token limit" value={limits.tokens} onChange={(v) => setLimits({ ...limits, tokens: v })} />
          <TextField label="Token window" value={limits.tokenReset} onChange={(v) => setLimits({ ...limits, tokenReset: v })} />
        </div>
        <ErrorBox error={formError ?? create.error} />
        <Button type="submit" tone="primary" disabled={create.isPending}>
          Create key
        </Button>
      </form>
    </Card>
  );
}
