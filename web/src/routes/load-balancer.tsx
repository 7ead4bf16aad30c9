/** Load balancer: its toggles and the health state of every route (provider key). */
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { SettingsService, type GetLoadBalancerConfigResponse } from "../../../gen/gw/admin/v1/settings_pb";
import { GovernanceService } from "../../../gen/gw/routing/v1/governance_pb";
import { Badge, Card, Empty, ErrorBox, Page, Switch, Table, Td, fmt } from "../ui/kit";

const TOGGLES: readonly [keyof Omit<GetLoadBalancerConfigResponse, "$typeName" | "$unknown">, string][] = [
  ["directionSelectionEnabled", "Choose and order providers by health for requests that name none"],
  ["routeSelectionEnabled", "Scale key weights by health and skip circuit-broken keys"],
  ["appendFallbacksToPinned", "Append healthy providers as fallbacks of a pinned request"],
  ["rerouteFailedDirections", "Move a pinned request off a circuit-broken provider"],
  ["pruneFailedFallbacks", "Drop circuit-broken providers from fallbacks"],
];

/** The load balancer page. */
export function LoadBalancerPage() {
  const config = useQuery(SettingsService.method.getLoadBalancerConfig, {});
  const routes = useQuery(GovernanceService.method.listRoutes, {});
  const qc = useQueryClient();
  const update = useMutation(SettingsService.method.updateLoadBalancerConfig, { onSuccess: () => qc.invalidateQueries() });
  return (
    <Page title="Load balancer">
      <Card title="Toggles">
        <ErrorBox error={config.error ?? update.error} />
        {config.data && (
          <ul className="space-y-2">
            {TOGGLES.map(([field, label]) => (
              <li key={field}>
                <Switch label={label} checked={config.data[field]} disabled={update.isPending} onChange={(on) => update.mutate({ [field]: on })} />
              </li>
            ))}
          </ul>
        )}
      </Card>
      <ErrorBox error={routes.error} />
      {routes.isSuccess && routes.data.routes.length === 0 && <Empty>No routes yet: they appear once providers with keys are configured.</Empty>}
      {routes.data && routes.data.routes.length > 0 && (
        <Table caption="Route health" head={["Provider", "Key", "State", "Weight", "Error rate", "ms/token", "Requests", "Since"]}>
          {routes.data.routes.map((r) => (
            <tr key={`${r.provider}/${r.keyId ?? ""}`}>
              <Td>{r.provider}</Td>
              <Td>{r.keyName ?? r.keyId ?? "(provider)"}</Td>
              <Td>
                <Badge state={r.state} />
              </Td>
              <Td>{fmt(r.weight)}</Td>
              <Td>{fmt(r.errorRate * 100)} %</Td>
              <Td>{fmt(r.latencyMsPerToken)}</Td>
              <Td>{String(r.requests)}</Td>
              <Td>{r.lastChangeAt}</Td>
            </tr>
          ))}
        </Table>
      )}
    </Page>
  );
}
