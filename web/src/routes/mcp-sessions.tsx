/** MCP sessions: the per-user credentials stored for MCP clients, by identity and status, with revoke. */
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { CredentialService } from "../../../gen/gw/credential/v1/credential_pb";
import { Badge, Button, Empty, ErrorBox, Page, Table, Td } from "../ui/kit";

/** The MCP sessions page. */
export function McpSessionsPage() {
  const list = useQuery(CredentialService.method.listSessions, {});
  const qc = useQueryClient();
  const revoke = useMutation(CredentialService.method.revokeSession, { onSuccess: () => qc.invalidateQueries() });
  const sessions = list.data?.sessions ?? [];
  return (
    <Page title="MCP sessions">
      <p className="text-sm text-slate-700">
        Credentials callers stored for per-user MCP clients. A caller enters or edits their values on the page linked from the <code>mcp_auth_required</code> answer of a tool call.
      </p>
      <ErrorBox error={list.error ?? revoke.error} />
      {list.isSuccess && sessions.length === 0 && <Empty>No stored credentials. They appear once a caller submits values for a per-user MCP client.</Empty>}
      {sessions.length > 0 && (
        <Table caption="Stored per-user credentials" head={["MCP client", "Identity", "Status", "Headers", "Updated", "Actions"]}>
          {sessions.map((s) => (
            <tr key={s.credentialId}>
              <Td>{s.mcpClientName}</Td>
              <Td>
                {s.identityKind}: {s.identity}
              </Td>
              <Td>
                <Badge state={s.status} />
              </Td>
              <Td>{s.headerKeys.join(", ")}</Td>
              <Td>{s.updatedAt ? timestampDate(s.updatedAt).toLocaleString() : ""}</Td>
              <Td>
                <Button tone="danger" confirm={`Revoke the credential of ${s.identity} for ${s.mcpClientName}?`} onClick={() => revoke.mutate({ credentialId: s.credentialId })}>
                  Revoke
                </Button>
              </Td>
            </tr>
          ))}
        </Table>
      )}
    </Page>
  );
}
