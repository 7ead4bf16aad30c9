/** Guardrails: what each checks, where and for whom, and what it does with a finding; create, edit, switch and delete. */
import { useId, useState, type FormEvent } from "react";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import {
  GuardrailAction,
  type GuardrailCheckSchema,
  GuardrailCheckType,
  GuardrailOnError,
  GuardrailScope,
  GuardrailService,
  GuardrailStage,
  PiiEntity,
  RedactionStrategy,
  type Guardrail,
} from "../../../gen/gw/admin/v1/guardrail_pb";
import { enumWord } from "../ui/enums";
import { parseHeaderLines } from "../ui/lines";
import { Badge, Button, Card, Empty, ErrorBox, Page, Select, Switch, Table, Td, TextArea, TextField } from "../ui/kit";

/** The values of an enum a form offers: every declared one but the zero value. */
function options(values: Record<number, string>): (readonly [string, string])[] {
  return Object.keys(values)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n !== 0)
    .map((n) => [String(n), enumWord(values, n).replace(/_/g, " ")] as const);
}

const STAGES = options(GuardrailStage);
const SCOPES = options(GuardrailScope);
const CHECK_TYPES = options(GuardrailCheckType);
const ACTIONS = options(GuardrailAction);
const ON_ERROR = options(GuardrailOnError);
const STRATEGIES = options(RedactionStrategy);
const ENTITIES = options(PiiEntity);
/** The checks whose findings can be cut out: only these offer the redact action. */
const REDACTABLE = new Set([GuardrailCheckType.PII, GuardrailCheckType.SECRETS, GuardrailCheckType.REGEX, GuardrailCheckType.KEYWORDS, GuardrailCheckType.WEBHOOK]);

/** Every field the form edits, so an edit sends all of them (a read sent back keeps what it does not change). */
const EDITED_FIELDS = ["name", "description", "enabled", "stages", "scope", "scope_id", "when", "check", "action", "redaction", "on_error", "timeout", "sampling_rate"];

/** One entry per line; blank lines dropped. */
function lines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** The guardrails page. */
export function GuardrailsPage() {
  const list = useQuery(GuardrailService.method.listGuardrails, {});
  const [creating, setCreating] = useState(false);
  const guardrails = list.data?.guardrails ?? [];
  return (
    <Page title="Guardrails" actions={<Button tone="primary" onClick={() => setCreating(!creating)}>{creating ? "Close form" : "Add guardrail"}</Button>}>
      {creating && (
        <Card title="Add a guardrail">
          <GuardrailForm onDone={() => setCreating(false)} />
        </Card>
      )}
      <ErrorBox error={list.error} />
      {list.isSuccess && guardrails.length === 0 && <Empty>No guardrails. Add one to find personal data, secrets, patterns or prompt injections in requests, answers and tool calls, and block, redact or report them.</Empty>}
      {guardrails.length > 0 && (
        <Table caption="Guardrails" head={["Name", "Stages", "Scope", "Check", "Action", "State", "Actions"]}>
          {guardrails.map((g) => (
            <GuardrailRow key={g.id} guardrail={g} />
          ))}
        </Table>
      )}
    </Page>
  );
}

/** One guardrail, with its editor below it when open. */
function GuardrailRow(props: { guardrail: Guardrail }) {
  const g = props.guardrail;
  const qc = useQueryClient();
  const update = useMutation(GuardrailService.method.updateGuardrail, { onSuccess: () => qc.invalidateQueries() });
  const remove = useMutation(GuardrailService.method.deleteGuardrail, { onSuccess: () => qc.invalidateQueries() });
  const [editing, setEditing] = useState(false);
  const enabled = g.enabled !== false;
  return (
    <>
      <tr>
        <Td>
          <span className="font-medium">{g.name}</span>
          <div className="text-xs text-slate-700">{g.description}</div>
          {g.when !== "" && <code className="break-all text-xs">when {g.when}</code>}
        </Td>
        <Td>{g.stages.map((s) => enumWord(GuardrailStage, s)).join(", ")}</Td>
        <Td>
          {enumWord(GuardrailScope, g.scope)}
          {g.scopeId !== "" && <div className="font-mono text-xs">{g.scopeId}</div>}
        </Td>
        <Td>{enumWord(GuardrailCheckType, g.check?.type ?? 0)}</Td>
        <Td>{enumWord(GuardrailAction, g.action)}</Td>
        <Td>
          <Badge state={enabled ? "enabled" : "disabled"} />
        </Td>
        <Td>
          <div className="flex flex-wrap gap-2">
            <Switch label="Enabled" checked={enabled} onChange={(on) => update.mutate({ id: g.id, guardrail: { enabled: on }, updateMask: { paths: ["enabled"] } })} />
            <Button onClick={() => setEditing(!editing)}>{editing ? "Close editor" : "Edit"}</Button>
            <Button tone="danger" confirm={`Delete the guardrail ${g.name}?`} onClick={() => remove.mutate({ id: g.id })}>
              Delete
            </Button>
          </div>
          <ErrorBox error={update.error ?? remove.error} />
        </Td>
      </tr>
      {editing && (
        <tr>
          <td colSpan={7} className="bg-slate-50 p-3">
            <GuardrailForm guardrail={g} onDone={() => setEditing(false)} />
          </td>
        </tr>
      )}
    </>
  );
}

/** What the form holds, as text and choices. */
interface Draft {
  name: string;
  description: string;
  enabled: boolean;
  stages: number[];
  scope: string;
  scopeId: string;
  when: string;
  checkType: string;
  entities: number[];
  patterns: string;
  caseInsensitive: boolean;
  words: string;
  provider: string;
  model: string;
  instructions: string;
  url: string;
  headers: string;
  webhookTimeout: string;
  action: string;
  strategy: string;
  replacement: string;
  onError: string;
  timeout: string;
  samplingRate: string;
}

/** The form's starting values: a guardrail's, or a new one's. */
function draftOf(g: Guardrail | undefined): Draft {
  const s = g?.check?.settings;
  return {
    name: g?.name ?? "",
    description: g?.description ?? "",
    enabled: g?.enabled !== false,
    stages: g ? [...g.stages] : [GuardrailStage.INPUT],
    scope: String(g?.scope || GuardrailScope.GLOBAL),
    scopeId: g?.scopeId ?? "",
    when: g?.when ?? "",
    checkType: String(g?.check?.type || GuardrailCheckType.PII),
    entities: s?.case === "pii" ? [...s.value.entities] : [],
    patterns: s?.case === "regex" ? s.value.patterns.join("\n") : "",
    caseInsensitive: s?.case === "regex" ? s.value.caseInsensitive : false,
    words: s?.case === "keywords" ? s.value.words.join("\n") : "",
    provider: s?.case === "moderation" || s?.case === "llmJudge" ? s.value.provider : "",
    model: s?.case === "moderation" || s?.case === "llmJudge" ? s.value.model : "",
    instructions: s?.case === "llmJudge" ? s.value.instructions : "",
    url: s?.case === "webhook" ? s.value.url : "",
    // Values read back as "<redacted>" are sent back as they are, which keeps the stored ones.
    headers: s?.case === "webhook" ? Object.entries(s.value.headers).map(([k, v]) => `${k}: ${v}`).join("\n") : "",
    webhookTimeout: s?.case === "webhook" ? s.value.timeout : "",
    action: String(g?.action || GuardrailAction.BLOCK),
    strategy: String(g?.redaction?.strategy || RedactionStrategy.REPLACE),
    replacement: g?.redaction?.replacement ?? "",
    onError: String(g?.onError || GuardrailOnError.BLOCK),
    timeout: g?.timeout ?? "2s",
    samplingRate: String(g?.samplingRate ?? 1),
  };
}

/** The check the draft describes, with only its type's settings. */
function checkOf(d: Draft): MessageInitShape<typeof GuardrailCheckSchema> {
  const type = Number(d.checkType) as GuardrailCheckType;
  switch (type) {
    case GuardrailCheckType.PII:
      return { type, settings: { case: "pii", value: { entities: d.entities } } };
    case GuardrailCheckType.REGEX:
      return { type, settings: { case: "regex", value: { patterns: lines(d.patterns), caseInsensitive: d.caseInsensitive } } };
    case GuardrailCheckType.KEYWORDS:
      return { type, settings: { case: "keywords", value: { words: lines(d.words) } } };
    case GuardrailCheckType.MODERATION:
      return { type, settings: { case: "moderation", value: { provider: d.provider, model: d.model } } };
    case GuardrailCheckType.LLM_JUDGE:
      return { type, settings: { case: "llmJudge", value: { provider: d.provider, model: d.model, instructions: d.instructions } } };
    case GuardrailCheckType.WEBHOOK:
      return { type, settings: { case: "webhook", value: { url: d.url, headers: parseHeaderLines(d.headers), timeout: d.webhookTimeout } } };
    default:
      return { type };
  }
}

/** Creates a guardrail, or edits `guardrail`; the server checks everything (CEL, patterns, owners) and its error is shown. */
function GuardrailForm(props: { guardrail?: Guardrail; onDone: () => void }) {
  const qc = useQueryClient();
  const [d, setDraft] = useState(() => draftOf(props.guardrail));
  const [formError, setFormError] = useState<Error | null>(null);
  const done = {
    onSuccess: async () => {
      await qc.invalidateQueries();
      props.onDone();
    },
  };
  const create = useMutation(GuardrailService.method.createGuardrail, done);
  const update = useMutation(GuardrailService.method.updateGuardrail, done);
  const set = <K extends keyof Draft>(field: K) => (v: Draft[K]) => setDraft({ ...d, [field]: v });
  const type = Number(d.checkType) as GuardrailCheckType;
  const redact = Number(d.action) === GuardrailAction.REDACT;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setFormError(null);
    let check: MessageInitShape<typeof GuardrailCheckSchema>;
    try {
      check = checkOf(d);
    } catch (err) {
      setFormError(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    const guardrail = {
      name: d.name,
      description: d.description,
      enabled: d.enabled,
      stages: d.stages,
      scope: Number(d.scope) as GuardrailScope,
      scopeId: Number(d.scope) === GuardrailScope.GLOBAL ? "" : d.scopeId,
      when: d.when,
      check,
      action: Number(d.action) as GuardrailAction,
      ...(redact ? { redaction: { strategy: Number(d.strategy) as RedactionStrategy, replacement: Number(d.strategy) === RedactionStrategy.REPLACE ? d.replacement : "" } } : {}),
      onError: Number(d.onError) as GuardrailOnError,
      timeout: d.timeout,
      samplingRate: Number(d.samplingRate),
    };
    if (props.guardrail) update.mutate({ id: props.guardrail.id, guardrail, updateMask: { paths: EDITED_FIELDS } });
    else create.mutate({ guardrail });
  };
  return (
    <form onSubmit={submit} className="grid gap-3 md:grid-cols-2">
      <TextField label="Name" value={d.name} onChange={set("name")} required />
      <TextField label="Description" value={d.description} onChange={set("description")} />
      <Choices legend="Stages" options={STAGES} chosen={d.stages} onChange={set("stages")} />
      <div className="flex flex-col gap-3">
        <Select label="Scope" value={d.scope} onChange={set("scope")} options={SCOPES} />
        {Number(d.scope) !== GuardrailScope.GLOBAL && <TextField label="Scope id" value={d.scopeId} onChange={set("scopeId")} required hint="The id of the customer, team or virtual key; an MCP client's id or name." />}
      </div>
      <div className="md:col-span-2">
        <TextArea label="When (CEL)" value={d.when} onChange={set("when")} rows={2} hint='For example: stage == "tool_output" && mcp_client == "crm". Empty applies to every request in scope.' />
      </div>
      <Select label="Check" value={d.checkType} onChange={set("checkType")} options={CHECK_TYPES} />
      <Select label="Action" value={d.action} onChange={set("action")} options={ACTIONS.filter(([v]) => Number(v) !== GuardrailAction.REDACT || REDACTABLE.has(type))} />
      {type === GuardrailCheckType.PII && <Choices legend="Personal data to find (none chosen: all)" options={ENTITIES} chosen={d.entities} onChange={set("entities")} />}
      {type === GuardrailCheckType.REGEX && (
        <>
          <TextArea label="Patterns, one per line" value={d.patterns} onChange={set("patterns")} />
          <Switch label="Ignore letter case" checked={d.caseInsensitive} onChange={set("caseInsensitive")} />
        </>
      )}
      {type === GuardrailCheckType.KEYWORDS && <TextArea label="Words, one per line" value={d.words} onChange={set("words")} />}
      {(type === GuardrailCheckType.MODERATION || type === GuardrailCheckType.LLM_JUDGE) && (
        <>
          <TextField label="Provider" value={d.provider} onChange={set("provider")} required hint="A configured provider." />
          <TextField label="Model" value={d.model} onChange={set("model")} required />
        </>
      )}
      {type === GuardrailCheckType.LLM_JUDGE && <TextArea label="Instructions" value={d.instructions} onChange={set("instructions")} hint="What the model should allow and what it should refuse." />}
      {type === GuardrailCheckType.WEBHOOK && (
        <>
          <TextField label="Webhook URL" value={d.url} onChange={set("url")} required />
          <TextField label="Webhook timeout" value={d.webhookTimeout} onChange={set("webhookTimeout")} hint="Empty: the guardrail's timeout." />
          <TextArea label="Webhook headers" value={d.headers} onChange={set("headers")} hint='One "Name: value" per line; a value shown as <redacted> keeps the stored one.' />
        </>
      )}
      {redact && (
        <>
          <Select label="Redaction" value={d.strategy} onChange={set("strategy")} options={STRATEGIES} />
          {Number(d.strategy) === RedactionStrategy.REPLACE && <TextField label="Replacement" value={d.replacement} onChange={set("replacement")} hint='Empty: "[REDACTED:<kind>]".' />}
        </>
      )}
      <Select label="On error" value={d.onError} onChange={set("onError")} options={ON_ERROR} />
      <TextField label="Timeout" value={d.timeout} onChange={set("timeout")} hint="From 1ms to 60s." />
      <TextField label="Sampling rate" value={d.samplingRate} onChange={set("samplingRate")} hint="The share of requests checked, 0 to 1." />
      <Switch label="Enabled" checked={d.enabled} onChange={set("enabled")} />
      <div className="md:col-span-2">
        <ErrorBox error={formError ?? create.error ?? update.error} />
      </div>
      <div className="flex gap-2 md:col-span-2">
        <Button type="submit" tone="primary" disabled={create.isPending || update.isPending}>
          Save guardrail
        </Button>
        <Button onClick={props.onDone}>Cancel</Button>
      </div>
    </form>
  );
}

/** A labelled group of checkboxes over enum values. */
function Choices(props: { legend: string; options: readonly (readonly [string, string])[]; chosen: readonly number[]; onChange: (v: number[]) => void }) {
  const id = useId();
  return (
    <fieldset className="flex flex-col gap-1">
      <legend className="text-sm font-medium">{props.legend}</legend>
      <div className="flex flex-wrap gap-3">
        {props.options.map(([value, text]) => {
          const n = Number(value);
          const on = props.chosen.includes(n);
          return (
            <span key={value} className="inline-flex items-center gap-1">
              <input id={`${id}-${value}`} type="checkbox" checked={on} onChange={() => props.onChange(on ? props.chosen.filter((c) => c !== n) : [...props.chosen, n])} className="h-4 w-4 accent-blue-700" />
              <label htmlFor={`${id}-${value}`} className="text-sm">
                {text}
              </label>
            </span>
          );
        })}
      </div>
    </fieldset>
  );
}
