/** Routing rules: by scope and priority; the CEL expression is checked by the server on save. */
import { useState, type FormEvent } from "react";
import { create as createMessage } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { GovernanceService, RoutingRuleScope, type RoutingRule } from "../../../gen/gw/routing/v1/governance_pb";
import { enumWord } from "../ui/enums";
import { splitList } from "../ui/lines";
import { Badge, Button, Card, Empty, ErrorBox, Page, Select, Switch, Table, Td, TextArea, TextField } from "../ui/kit";

const SCOPES = [
  [String(RoutingRuleScope.GLOBAL), "Global"],
  [String(RoutingRuleScope.CUSTOMER), "Customer"],
  [String(RoutingRuleScope.TEAM), "Team"],
  [String(RoutingRuleScope.VIRTUAL_KEY), "Virtual key"],
] as const;

/** Orders rules as the gateway evaluates them: scope, then priority. */
function byEvaluation(a: RoutingRule, b: RoutingRule): number {
  return a.scope - b.scope || a.priority - b.priority || a.name.localeCompare(b.name);
}

/** The routing rules page. */
export function RoutingRulesPage() {
  const list = useQuery(GovernanceService.method.listRoutingRules, {});
  const [creating, setCreating] = useState(false);
  const rules = [...(list.data?.routingRules ?? [])].sort(byEvaluation);
  return (
    <Page title="Routing rules" actions={<Button tone="primary" onClick={() => setCreating(!creating)}>{creating ? "Close form" : "Add routing rule"}</Button>}>
      {creating && <CreateRule onDone={() => setCreating(false)} />}
      <ErrorBox error={list.error} />
      {list.isSuccess && rules.length === 0 && <Empty>No routing rules. Add one to send requests matching a CEL expression to another provider or model.</Empty>}
      {rules.length > 0 && (
        <Table caption="Routing rules" head={["Name", "Scope", "Priority", "Expression", "Targets", "State", "Actions"]}>
          {rules.map((r) => (
            <RuleRow key={r.id} rule={r} />
          ))}
        </Table>
      )}
    </Page>
  );
}

/** One rule. */
function RuleRow(props: { rule: RoutingRule }) {
  const r = props.rule;
  const qc = useQueryClient();
  const update = useMutation(GovernanceService.method.updateRoutingRule, { onSuccess: () => qc.invalidateQueries() });
  const remove = useMutation(GovernanceService.method.deleteRoutingRule, { onSuccess: () => qc.invalidateQueries() });
  const enabled = r.enabled !== false;
  return (
    <tr>
      <Td>
        <span className="font-medium">{r.name}</span>
        <div className="text-xs text-slate-700">{r.description}</div>
      </Td>
      <Td>
        {enumWord(RoutingRuleScope, r.scope)}
        {r.scopeId !== "" && <div className="font-mono text-xs">{r.scopeId}</div>}
      </Td>
      <Td>{r.priority}</Td>
      <Td>
        <code className="break-all text-xs">{r.celExpression || "(always)"}</code>
      </Td>
      <Td>{r.targets.map((t) => `${t.provider || "same provider"}/${t.model || "same model"}`).join(", ")}</Td>
      <Td>
        <Badge state={enabled ? "enabled" : "disabled"} />
      </Td>
      <Td>
        <div className="flex flex-wrap gap-2">
          <Switch label="Enabled" checked={enabled} onChange={(on) => update.mutate({ id: r.id, routingRule: { enabled: on }, updateMask: { paths: ["enabled"] } })} />
          <Button tone="danger" confirm={`Delete the routing rule ${r.name}?`} onClick={() => remove.mutate({ id: r.id })}>
            Delete
          </Button>
        </div>
        <ErrorBox error={update.error ?? remove.error} />
      </Td>
    </tr>
  );
}

/** The create form; an expression the server cannot compile comes back as its error and nothing is saved. */
function CreateRule(props: { onDone: () => void }) {
  const qc = useQueryClient();
  const [rule, setRule] = useState({ name: "", cel: "", description: "", provider: "", model: "", fallbacks: "", priority: "0", scope: String(RoutingRuleScope.GLOBAL), scopeId: "" });
  const create = useMutation(GovernanceService.method.createRoutingRule, {
    onSuccess: async () => {
      await qc.invalidateQueries();
      props.onDone();
    },
  });
  const set = (field: keyof typeof rule) => (v: string) => setRule({ ...rule, [field]: v });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      routingRule: {
        name: rule.name,
        celExpression: rule.cel,
        description: rule.description,
        targets: [{ provider: rule.provider, model: rule.model }],
        // Each entry is sent in its "provider/model" string form, one of the forms a rule's fallbacks take.
        fallbacks: splitList(rule.fallbacks).map((text) => createMessage(ValueSchema, { kind: { case: "stringValue", value: text } })),
        priority: Number.parseInt(rule.priority, 10) || 0,
        scope: Number(rule.scope) as RoutingRuleScope,
        scopeId: rule.scopeId,
      },
    });
  };
  return (
    <Card title="Add a routing rule">
      <form onSubmit={submit} className="grid gap-3 md:grid-cols-2">
        <TextField label="Name" value={rule.name} onChange={set("name")} required />
        <TextField label="Description" value={rule.description} onChange={set("description")} />
        <div className="md:col-span-2">
          <TextArea label="CEL expression" value={rule.cel} onChange={set("cel")} rows={2} hint='For example: model == "gpt-4o" && headers["x-tier"] == "free". Empty matches every request.' />
        </div>
        <TextField label="Target provider" value={rule.provider} onChange={set("provider")} hint="Empty keeps the request's provider." />
        <TextField label="Target model" value={rule.model} onChange={set("model")} hint="Empty keeps the request's model." />
        <TextField label="Fallbacks" value={rule.fallbacks} onChange={set("fallbacks")} hint='Comma-separated "provider/model" entries.' />
        <TextField label="Priority" value={rule.priority} onChange={set("priority")} hint="Lower runs first." />
        <Select label="Scope" value={rule.scope} onChange={set("scope")} options={SCOPES} />
        {Number(rule.scope) !== RoutingRuleScope.GLOBAL && <TextField label="Scope id" value={rule.scopeId} onChange={set("scopeId")} required />}
        <div className="md:col-span-2">
          <ErrorBox error={create.error} />
        </div>
        <div className="flex gap-2 md:col-span-2">
          <Button type="submit" tone="primary" disabled={create.isPending}>
            Save rule
          </Button>
          <Button onClick={props.onDone}>Cancel</Button>
        </div>
      </form>
    </Card>
  );
}
