/**
 * Providers & models: providers with their keys (values masked), add and remove, each provider's catalog
 * models with their prices, and syncing models and prices now. Prices come from the pricing API, an admin
 * read; /v1/models is a caller's listing (it answers for the caller's virtual key) and is not used here.
 */
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { PricingService, ProviderService, type Provider } from "../../../gen/gw/catalog/v1/catalog_pb";
import { splitList } from "../ui/lines";
import { Button, Card, Empty, ErrorBox, Page, Table, Td, TextField } from "../ui/kit";

/** The providers page. */
export function ProvidersPage() {
  const list = useQuery(ProviderService.method.listProviders, {});
  const qc = useQueryClient();
  const sync = useMutation(PricingService.method.syncPricing, { onSuccess: () => qc.invalidateQueries() });
  const [creating, setCreating] = useState(false);
  const providers = list.data?.providers ?? [];
  const actions = (
    <div className="flex gap-2">
      <Button onClick={() => sync.mutate({})} disabled={sync.isPending}>
        Sync prices now
      </Button>
      <Button tone="primary" onClick={() => setCreating(!creating)}>
        {creating ? "Close form" : "Add provider"}
      </Button>
    </div>
  );
  return (
    <Page title="Providers & models" actions={actions}>
      {creating && <CreateProvider onDone={() => setCreating(false)} />}
      {sync.data && <p className="text-sm">Prices synced: {sync.data.modelsCount} models.</p>}
      <ErrorBox error={list.error ?? sync.error} />
      {list.isSuccess && providers.length === 0 && <Empty>No providers yet. Add one with an API key; its models are fetched right away.</Empty>}
      {providers.map((p) => (
        <ProviderCard key={p.name} provider={p} />
      ))}
    </Page>
  );
}

/** One provider, its keys and models. */
function ProviderCard(props: { provider: Provider }) {
  const p = props.provider;
  const qc = useQueryClient();
  const models = useQuery(PricingService.method.getPricing, { provider: p.name });
  const refetch = useMutation(ProviderService.method.refetchModels, { onSuccess: () => qc.invalidateQueries() });
  const remove = useMutation(ProviderService.method.deleteProvider, { onSuccess: () => qc.invalidateQueries() });
  return (
    <Card>
      <div className="flex flex-wrap items-center justify-between gap-2">
        <h2 className="text-lg font-semibold">{p.name}</h2>
        <div className="flex gap-2">
          <Button onClick={() => refetch.mutate({ name: p.name })} disabled={refetch.isPending}>
            Sync models now
          </Button>
          <Button tone="danger" confirm={`Delete the provider ${p.name} and its keys?`} onClick={() => remove.mutate({ name: p.name })}>
            Delete
          </Button>
        </div>
      </div>
      {p.networkConfig?.baseUrl && <p className="text-sm text-slate-700">Base URL: {p.networkConfig.baseUrl}</p>}
      {refetch.data && <p className="text-sm">Synced: {refetch.data.modelsCount} models.</p>}
      <ErrorBox error={refetch.error ?? remove.error} />
      <Table caption={`Keys of ${p.name}`} head={["Key", "Value", "Models", "Weight"]}>
        {p.keys.map((k) => (
          <tr key={k.id}>
            <Td>{k.name || k.id}</Td>
            <Td>
              <code>{k.value}</code>
            </Td>
            <Td>{k.models.length === 0 ? "all" : k.models.join(", ")}</Td>
            <Td>{k.weight ?? 1}</Td>
          </tr>
        ))}
      </Table>
      <details className="mt-2">
        <summary className="cursor-pointer text-sm font-medium">Models and prices ({models.data?.entries.length ?? 0})</summary>
        <ErrorBox error={models.error} />
        <Table caption={`Catalog prices of ${p.name}, USD per million tokens`} head={["Model", "Mode", "Input", "Output"]}>
          {(models.data?.entries ?? []).map((m) => (
            <tr key={`${m.model}/${m.mode}`}>
              <Td>
                <code>{m.model}</code>
              </Td>
              <Td>{m.mode}</Td>
              <Td>{(m.inputCostPerToken * 1e6).toFixed(2)}</Td>
              <Td>{(m.outputCostPerToken * 1e6).toFixed(2)}</Td>
            </tr>
          ))}
        </Table>
      </details>
    </Card>
  );
}

/** Adds a provider with one key. */
function CreateProvider(props: { onDone: () => void }) {
  const qc = useQueryClient();
  const [form, setForm] = useState({ name: "", keyId: "default", value: "", models: "", baseUrl: "" });
  const set = (field: keyof typeof form) => (v: string) => setForm({ ...form, [field]: v });
  const create = useMutation(ProviderService.method.createProvider, {
    onSuccess: async () => {
      await qc.invalidateQueries();
      props.onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      provider: {
        name: form.name,
        keys: [{ id: form.keyId, name: form.keyId, value: form.value, models: splitList(form.models) }],
        ...(form.baseUrl !== "" ? { networkConfig: { baseUrl: form.baseUrl } } : {}),
      },
    });
  };
  return (
    <Card title="Add a provider">
      <form onSubmit={submit} className="grid gap-3 md:grid-cols-2">
        <TextField label="Provider" value={form.name} onChange={set("name")} required placeholder="openai" />
        <TextField label="Base URL" value={form.baseUrl} onChange={set("baseUrl")} hint="Empty: the provider's default address." />
        <TextField label="Key id" value={form.keyId} onChange={set("keyId")} required />
        <TextField label="API key" type="password" value={form.value} onChange={set("value")} />
        <TextField label="Models" value={form.models} onChange={set("models")} hint="Comma-separated; empty: every model." />
        <div className="md:col-span-2">
          <ErrorBox error={create.error} />
        </div>
        <div className="flex gap-2 md:col-span-2">
          <Button type="submit" tone="primary" disabled={create.isPending}>
            Add provider
          </Button>
          <Button onClick={props.onDone}>Cancel</Button>
        </div>
      </form>
    </Card>
  );
}
