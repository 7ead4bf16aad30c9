/**
 * Overview: request rate, error ratio and latency from the load balancer's route statistics, spend and
 * tokens from the virtual keys' usage windows, and the most used models from the routing log.
 */
import { useEffect, useMemo, useState } from "react";
import { createQueryOptions, useQuery, useTransport } from "@connectrpc/connect-query";
import { useQueries } from "@tanstack/react-query";
import { GovernanceService, type RouteHealth } from "../../../gen/gw/routing/v1/governance_pb";
import { LineChart, type Series } from "../ui/chart";
import { Card, Empty, ErrorBox, Page, Table, Td, fmt } from "../ui/kit";

/** Totals over every route: requests since start, error ratio and latency weighted by requests. */
function totals(routes: readonly RouteHealth[]): { requests: number; errorRatio: number; latency: number } {
  let requests = 0;
  let errors = 0;
  let latency = 0;
  for (const r of routes) {
    const n = Number(r.requests);
    requests += n;
    errors += r.errorRate * n;
    latency += r.latencyMsPerToken * n;
  }
  return { requests, errorRatio: requests > 0 ? errors / requests : 0, latency: requests > 0 ? latency / requests : 0 };
}

const HISTORY = 120;

// Kept for the tab's lifetime, so the chart keeps its history when the operator visits another page and comes back.
const samples: { t: number; requests: number }[] = [];

/** The request rate between each two polls, as a chart series. */
function rateSeries(): Series {
  const x: number[] = [];
  const y: number[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1];
    const b = samples[i];
    if (a === undefined || b === undefined) continue;
    x.push(b.t);
    y.push(Math.max(0, (b.requests - a.requests) / (b.t - a.t)));
  }
  return { label: "requests/s", x, y };
}

/** The overview page. */
export function OverviewPage() {
  const routes = useQuery(GovernanceService.method.listRoutes, {});
  const log = useQuery(GovernanceService.method.listRoutingLog, { limit: 200 });
  const keys = useQuery(GovernanceService.method.listVirtualKeys, {});
  const transport = useTransport();
  const usages = useQueries({
    queries: (keys.data?.virtualKeys ?? []).map((k) => ({ ...createQueryOptions(GovernanceService.method.getVirtualKeyUsage, { id: k.id }, { transport }), refetchInterval: 5000 })),
  });
  const now = totals(routes.data?.routes ?? []);
  // The request rate is the change of the request count between two polls.
  const [rate, setRate] = useState<Series>(rateSeries);
  useEffect(() => {
    if (!routes.data) return;
    const t = routes.dataUpdatedAt / 1000;
    const prev = samples[samples.length - 1];
    if (prev !== undefined && t <= prev.t) return;
    samples.push({ t, requests: now.requests });
    if (samples.length > HISTORY) samples.shift();
    setRate(rateSeries());
  }, [routes.data, routes.dataUpdatedAt, now.requests]);
  const spend = useMemo(() => {
    const rows = (keys.data?.virtualKeys ?? []).map((k, i) => {
      const own = usages[i]?.data?.levels.find((l) => l.level === "virtual_key");
      return { name: k.name, spend: own?.budget?.used ?? 0, tokens: own?.tokens?.used ?? 0, requests: own?.requests?.used ?? 0 };
    });
    return rows.sort((a, b) => b.spend - a.spend || b.tokens - a.tokens);
  }, [keys.data, usages]);
  const topModels = useMemo(() => {
    const counts = new Map<string, number>();
    for (const e of log.data?.entries ?? []) {
      const key = `${e.provider}/${e.model}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
  }, [log.data]);
  const lastRate = rate.y[rate.y.length - 1] ?? 0;
  return (
    <Page title="Overview">
      <ErrorBox error={routes.error ?? log.error ?? keys.error} />
      <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-4">
        <Stat label="Requests/s" value={fmt(lastRate)} testId="stat-rate" />
        <Stat label="Requests (since start)" value={fmt(now.requests)} testId="stat-requests" />
        <Stat label="Error ratio" value={`${fmt(now.errorRatio * 100)} %`} testId="stat-errors" />
        <Stat label="Latency per token" value={`${fmt(now.latency)} ms`} testId="stat-latency" />
      </div>
      <Card title="Requests per second">
        {rate.x.length < 2 && <p className="text-sm text-slate-700">The chart fills in as the page polls the gateway every 5 seconds while it stays open.</p>}
        <LineChart title={`Requests per second; now ${fmt(lastRate)}`} series={rate} />
      </Card>
      <div className="grid gap-3 lg:grid-cols-2">
        <Card title="Top keys by spend">
          {spend.length === 0 ? (
            <Empty>No virtual keys yet: create one to see spend and tokens per key.</Empty>
          ) : (
            <Table caption="Spend per virtual key in the current window" head={["Key", "Spend (USD)", "Tokens", "Requests"]}>
              {spend.slice(0, 5).map((r) => (
                <tr key={r.name}>
                  <Td>{r.name}</Td>
                  <Td>{fmt(r.spend)}</Td>
                  <Td>{fmt(r.tokens)}</Td>
                  <Td>{fmt(r.requests)}</Td>
                </tr>
              ))}
            </Table>
          )}
        </Card>
        <Card title="Top models">
          {topModels.length === 0 ? (
            <Empty>No routed requests yet: send one to /v1/chat/completions.</Empty>
          ) : (
            <Table caption="Most routed models" head={["Provider/model", "Requests"]}>
              {topModels.map(([model, n]) => (
                <tr key={model}>
                  <Td>{model}</Td>
                  <Td>{n}</Td>
                </tr>
              ))}
            </Table>
          )}
        </Card>
      </div>
    </Page>
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
