/**
 * Overview: requests/s, error ratio, p50/p95 latency, tokens and spend over the last hour, day or week
 * from the usage history (every node's per-minute buckets), with the busiest keys, models and tools.
 */
import { useMemo, useState } from "react";
import { useQuery } from "@connectrpc/connect-query";
import { GovernanceService, type UsageTally } from "../../../gen/gw/routing/v1/governance_pb";
import { LineChart, type Series } from "../ui/chart";
import { Card, Empty, ErrorBox, Page, Table, Td, fmt, usd } from "../ui/kit";

/** The ranges the history serves, as the switch names them. */
const RANGES = [
  ["1h", "1 hour"],
  ["24h", "24 hours"],
  ["7d", "7 days"],
] as const;

type Range = (typeof RANGES)[number][0];

/** The overview page. */
export function OverviewPage() {
  const [range, setRange] = useState<Range>("1h");
  const history = useQuery(GovernanceService.method.getUsageHistory, { range });
  const data = history.data;
  const totals = data?.totals;
  const series = useMemo(() => {
    const points = data?.points ?? [];
    const x = points.map((p) => Date.parse(p.start) / 1000);
    const pick = (label: string, f: (p: (typeof points)[number]) => number): Series => ({ label, x, y: points.map(f) });
    return {
      rate: pick("requests/s", (p) => p.requestsPerSecond),
      p95: pick("p95 latency (ms)", (p) => p.p95LatencyMs),
      errors: pick("error ratio (%)", (p) => p.errorRatio * 100),
    };
  }, [data]);
  const label = RANGES.find(([r]) => r === range)?.[1] ?? range;
  return (
    <Page title="Overview" actions={<RangeSwitch value={range} onChange={setRange} />}>
      <ErrorBox error={history.error} />
      <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-4">
        <Stat label="Requests/s" value={fmt(totals?.requestsPerSecond ?? 0)} testId="stat-rate" />
        <Stat label={`Requests (${label})`} value={fmt(Number(totals?.requests ?? 0n))} testId="stat-requests" />
        <Stat label="Error ratio" value={`${fmt((totals?.errorRatio ?? 0) * 100)} %`} testId="stat-errors" />
        <Stat label="Latency p50 / p95" value={`${fmt(totals?.p50LatencyMs ?? 0)} / ${fmt(totals?.p95LatencyMs ?? 0)} ms`} testId="stat-latency" />
        <Stat label="Input tokens" value={fmt(Number(totals?.inputTokens ?? 0n))} testId="stat-input-tokens" />
        <Stat label="Output tokens" value={fmt(Number(totals?.outputTokens ?? 0n))} testId="stat-output-tokens" />
        <Stat label="Spend (USD)" value={usd(totals?.costUsd ?? 0)} testId="stat-spend" />
      </div>
      <div className="grid gap-3 lg:grid-cols-3">
        <Card title="Requests per second">
          <LineChart title={`Requests per second over ${label}`} series={series.rate} />
        </Card>
        <Card title="p95 latency (ms)">
          <LineChart title={`95th percentile latency over ${label}`} series={series.p95} />
        </Card>
        <Card title="Error ratio (%)">
          <LineChart title={`Error ratio over ${label}`} series={series.errors} />
        </Card>
      </div>
      <div className="grid gap-3 lg:grid-cols-3">
        <TopCard title="Top keys" caption={`Virtual keys by spend over ${label}`} first="Key" rows={data?.topKeys} empty="No requests in this range. Send one to /v1/chat/completions with a virtual key." />
        <TopCard title="Top models" caption={`Models by spend over ${label}`} first="Provider/model" rows={data?.topModels} empty="No routed requests in this range." />
        <TopCard title="Top tools" caption={`Tools run by the agent loop over ${label}`} first="Tool" rows={data?.topTools} empty="No tool ran in agent mode in this range." />
      </div>
    </Page>
  );
}

/** The 1 h / 24 h / 7 d switch, a group of toggle buttons. */
function RangeSwitch(props: { value: Range; onChange: (r: Range) => void }) {
  return (
    <div role="group" aria-label="Time range" className="flex gap-1">
      {RANGES.map(([r, text]) => (
        <button
          key={r}
          type="button"
          aria-pressed={props.value === r}
          onClick={() => props.onChange(r)}
          className={`rounded border px-3 py-1.5 text-sm font-medium focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-700 ${props.value === r ? "border-blue-700 bg-blue-700 text-white" : "border-slate-300 bg-white text-slate-900 hover:bg-slate-100"}`}
        >
          {text}
        </button>
      ))}
    </div>
  );
}

/** A top-5 table of keys, models or tools. */
function TopCard(props: { title: string; caption: string; first: string; rows: readonly UsageTally[] | undefined; empty: string }) {
  const rows = props.rows ?? [];
  return (
    <Card title={props.title}>
      {rows.length === 0 ? (
        <Empty>{props.empty}</Empty>
      ) : (
        <Table caption={props.caption} head={[props.first, "Requests", "Tokens", "Spend (USD)"]}>
          {rows.map((r) => (
            <tr key={r.name}>
              <Td>{r.name}</Td>
              <Td>{fmt(Number(r.requests))}</Td>
              <Td>{fmt(Number(r.tokens))}</Td>
              <Td>{usd(r.costUsd)}</Td>
            </tr>
          ))}
        </Table>
      )}
    </Card>
  );
}

/** One headline number. */
function Stat(props: { label: string; value: string; testId: string }) {
  return (
    <div className="rounded-lg border border-slate-200 bg-white p-3 shadow-sm">
      <div className="text-sm text-slate-700">{props.label}</div>
      <div className="text-2xl font-semibold" data-testid={props.testId}>
        {props.value}
      </div>
    </div>
  );
}
