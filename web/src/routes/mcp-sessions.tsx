/** MCP sessions: the per-user credentials stored for MCP clients, by identity and status, with Edit values and revoke. */
import { useState } from "react";
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
  // The flow opens in a new tab; its link also stays on the page, for a browser that blocked the tab.
  const [opened, setOpened] = useState<{ credentialId: string; url: string } | null>(null);
  const edit = useMutation(CredentialService.method.startEditFlow, {
    onSuccess: (res, req) => {
      setOpened({ credentialId: req.credentialId ?? "", url: res.flowUrl });
      window.open(res.flowUrl, "_blank", "noopener");
    },
  });
  const sessions = list.data?.sessions ?? [];
  return (
    <Page title="MCP sessions">
      <p className="text-sm text-slate-700">
        Credentials callers stored for per-user MCP clients. A caller enters or edits their values on the page linked from the <code>mcp_auth_required</code> answer of a tool call; Edit values opens that page for a stored credential.
      </p>
      <ErrorBox error={list.error ?? revoke.error ?? edit.error} />
      {opened !== null && (
        <p role="status" className="text-sm">
          The submission page opened in a new tab.{" "}
          <a href={opened.url} target="_blank" rel="noopener" className="text-blue-800 underline" data-testid="edit-flow-link">
            Open it again
          </a>
          ; the link expires in 15 minutes.
        </p>
      )}
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
                <div className="flex flex-wrap gap-1">
                  <Button onClick={() => edit.mutate({ credentialId: s.credentialId })} disabled={edit.isPending}>
                    Edit values
                  </Button>
                  <Button tone="danger" confirm={`Revoke the credential of ${s.identity} for ${s.mcpClientName}?`} onClick={() => revoke.mutate({ credentialId: s.credentialId })}>
                    Revoke
                  </Button>
                </div>
              </Td>
            </tr>
          ))}
        </Table>
      )}
    </Page>
  );
}
