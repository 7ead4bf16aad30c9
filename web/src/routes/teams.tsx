/** Teams & customers: the business unit > customer > team hierarchy with budgets, spend and limits; create and delete. */
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { GovernanceService, type Budget, type RateLimit, type UsageLevel } from "../../../gen/gw/routing/v1/governance_pb";
import { Button, Card, Empty, ErrorBox, Page, Select, Table, Td, TextField, fmt, usd } from "../ui/kit";

/** A budget and rate limit in words. */
function limitsText(budget: Budget | undefined, limit: RateLimit | undefined): string {
  const parts: string[] = [];
  if (budget) parts.push(`${fmt(budget.maxLimit)} USD / ${budget.resetDuration}`);
  if (limit && limit.requestMaxLimit > 0n) parts.push(`${limit.requestMaxLimit} requests / ${limit.requestResetDuration}`);
  if (limit && limit.tokenMaxLimit > 0n) parts.push(`${limit.tokenMaxLimit} tokens / ${limit.tokenResetDuration}`);
  return parts.length === 0 ? "no limits" : parts.join(", ");
}

/** What a level used in its current windows, in words; spend is counted only against a budget. */
function usageText(usage: UsageLevel | undefined): string {
  if (usage === undefined) return "no budget or limit";
  const parts: string[] = [];
  if (usage.budget) parts.push(`${usd(usage.budget.used)} of ${fmt(usage.budget.maxLimit)} USD`);
  if (usage.requests) parts.push(`${fmt(usage.requests.used)} of ${fmt(usage.requests.maxLimit)} requests`);
  if (usage.tokens) parts.push(`${fmt(usage.tokens.used)} of ${fmt(usage.tokens.maxLimit)} tokens`);
  return parts.length === 0 ? "no budget or limit" : parts.join(", ");
}

/** The teams and customers page. */
export function TeamsPage() {
  const units = useQuery(GovernanceService.method.listBusinessUnits, {});
  const customers = useQuery(GovernanceService.method.listCustomers, {});
  const teams = useQuery(GovernanceService.method.listTeams, {});
  const usage = useQuery(GovernanceService.method.listGroupUsage, {});
  const usageOf = new Map((usage.data?.levels ?? []).map((l) => [`${l.level}:${l.id}`, l]));
  const qc = useQueryClient();
  const refresh = () => qc.invalidateQueries();
  const delUnit = useMutation(GovernanceService.method.deleteBusinessUnit, { onSuccess: refresh });
  const delCustomer = useMutation(GovernanceService.method.deleteCustomer, { onSuccess: refresh });
  const delTeam = useMutation(GovernanceService.method.deleteTeam, { onSuccess: refresh });
  const unitName = new Map((units.data?.businessUnits ?? []).map((u) => [u.id, u.name]));
  const customerName = new Map((customers.data?.customers ?? []).map((c) => [c.id, c.name]));
  const rows = [
    ...(units.data?.businessUnits ?? []).map((u) => ({ kind: "Business unit", id: u.id, name: u.name, parent: "", limits: limitsText(u.budget, u.rateLimit), used: usageText(usageOf.get(`business_unit:${u.id}`)), del: () => delUnit.mutate({ id: u.id }) })),
    ...(customers.data?.customers ?? []).map((c) => ({ kind: "Customer", id: c.id, name: c.name, parent: unitName.get(c.businessUnitId) ?? "", limits: limitsText(c.budget, c.rateLimit), used: usageText(usageOf.get(`customer:${c.id}`)), del: () => delCustomer.mutate({ id: c.id }) })),
    ...(teams.data?.teams ?? []).map((t) => ({ kind: "Team", id: t.id, name: t.name, parent: customerName.get(t.customerId) ?? "", limits: limitsText(t.budget, t.rateLimit), used: usageText(usageOf.get(`team:${t.id}`)), del: () => delTeam.mutate({ id: t.id }) })),
  ];
  return (
    <Page title="Teams & customers">
      <CreateMember units={units.data?.businessUnits ?? []} customers={customers.data?.customers ?? []} />
      <p className="text-sm text-slate-700">Spend, requests and tokens are counted in the current window of each budget or limit; a level without a budget counts no spend.</p>
      <ErrorBox error={units.error ?? customers.error ?? teams.error ?? usage.error ?? delUnit.error ?? delCustomer.error ?? delTeam.error} />
      {units.isSuccess && rows.length === 0 && <Empty>No business units, customers or teams yet. Create one above, then attach virtual keys to it to share a budget.</Empty>}
      {rows.length > 0 && (
        <Table caption="Business units, customers and teams" head={["Kind", "Name", "Belongs to", "Budget and limits", "Used this window", "Actions"]}>
          {rows.map((r) => (
            <tr key={`${r.kind}-${r.id}`}>
              <Td>{r.kind}</Td>
              <Td>
                {r.name}
                <div className="font-mono text-xs text-slate-700">{r.id}</div>
              </Td>
              <Td>{r.parent}</Td>
              <Td>{r.limits}</Td>
              <Td>{r.used}</Td>
              <Td>
                <Button tone="danger" confirm={`Delete the ${r.kind.toLowerCase()} ${r.name}?`} onClick={r.del}>
                  Delete
                </Button>
              </Td>
            </tr>
          ))}
        </Table>
      )}
    </Page>
  );
}

/** Creates a business unit, customer or team with an optional budget. */
function CreateMember(props: { units: readonly { id: string; name: string }[]; customers: readonly { id: string; name: string }[] }) {
  const qc = useQueryClient();
  const [kind, setKind] = useState("team");
  const [name, setName] = useState("");
  const [parent, setParent] = useState("");
  const [budget, setBudget] = useState("");
  const [reset, setReset] = useState("1M");
  const done = { onSuccess: () => { setName(""); void qc.invalidateQueries(); } };
  const unit = useMutation(GovernanceService.method.createBusinessUnit, done);
  const customer = useMutation(GovernanceService.method.createCustomer, done);
  const team = useMutation(GovernanceService.method.createTeam, done);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const b = budget !== "" ? { budget: { maxLimit: Number(budget), resetDuration: reset } } : {};
    if (kind === "business_unit") unit.mutate({ businessUnit: { name, ...b } });
    else if (kind === "customer") customer.mutate({ customer: { name, businessUnitId: parent, ...b } });
    else team.mutate({ team: { name, customerId: parent, ...b } });
  };
  const parents = kind === "customer" ? props.units : kind === "team" ? props.customers : [];
  return (
    <Card title="Create">
      <form onSubmit={submit} className="grid gap-3 md:grid-cols-3">
        <Select label="Kind" value={kind} onChange={(v) => { setKind(v); setParent(""); }} options={[["business_unit", "Business unit"], ["customer", "Customer"], ["team", "Team"]]} />
        <TextField label="Name" value={name} onChange={setName} required />
        {kind !== "business_unit" && <Select label={kind === "team" ? "Customer" : "Business unit"} value={parent} onChange={setParent} options={[["", "none"], ...parents.map((p) => [p.id, p.name] as const)]} />}
        <TextField label="Budget (USD)" value={budget} onChange={setBudget} hint="Empty: no budget." />
        <TextField label="Budget window" value={reset} onChange={setReset} />
        <div className="flex items-end">
          <Button type="submit" tone="primary">
            Create
          </Button>
        </div>
        <div className="md:col-span-3">
          <ErrorBox error={unit.error ?? customer.error ?? team.error} />
        </div>
      </form>
    </Card>
  );
}
