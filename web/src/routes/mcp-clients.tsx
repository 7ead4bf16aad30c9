/** MCP clients: states, tools with per-tool switches and quarantine, create and edit with every auth type, OAuth authorize, reconnect, delete. */
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import {
  AuthType,
  ClientState,
  ConnectionType,
  FailureStage,
  McpClientService,
  ToolState,
  type CreateMcpClientResponse,
  type McpClient,
  type Tool,
} from "../../../gen/gw/admin/v1/mcp_client_pb";
import { OauthService } from "../../../gen/gw/admin/v1/oauth_pb";
import { enumWord } from "../ui/enums";
import { parseHeaderLines, splitList } from "../ui/lines";
import { Badge, Button, Card, Empty, ErrorBox, Page, Select, Switch, TextArea, TextField } from "../ui/kit";

const AUTH_TYPES = [
  [String(AuthType.NONE), "None"],
  [String(AuthType.HEADERS), "Static headers"],
  [String(AuthType.OAUTH), "OAuth (shared)"],
  [String(AuthType.PER_USER_HEADERS), "Per-user headers"],
  [String(AuthType.PER_USER_OAUTH), "Per-user OAuth"],
  [String(AuthType.TOKEN_EXCHANGE), "Token exchange"],
] as const;

const CONNECTIONS = [
  [String(ConnectionType.HTTP), "Streamable HTTP"],
  [String(ConnectionType.SSE), "SSE"],
  [String(ConnectionType.STDIO), "stdio (needs a signed-in admin)"],
] as const;

/** The MCP clients page. */
export function McpClientsPage() {
  const list = useQuery(McpClientService.method.listMcpClients, {});
  const [creating, setCreating] = useState(false);
  const clients = list.data?.clients ?? [];
  return (
    <Page title="MCP clients" actions={<Button tone="primary" onClick={() => setCreating(!creating)}>{creating ? "Close form" : "Add MCP client"}</Button>}>
      {creating && <CreateForm onDone={() => setCreating(false)} />}
      <ErrorBox error={list.error} />
      {list.isSuccess && clients.length === 0 && <Empty>No MCP clients yet. Add one with its URL (or command) and auth type; its tools appear here once it connects.</Empty>}
      {clients.map((c) => (
        <ClientCard key={c.clientId} client={c} />
      ))}
    </Page>
  );
}

/** One client: state, failure, tools with switches, and its actions. */
function ClientCard(props: { client: McpClient }) {
  const c = props.client;
  const qc = useQueryClient();
  const refresh = () => qc.invalidateQueries();
  const reconnect = useMutation(McpClientService.method.reconnectMcpClient, { onSuccess: refresh });
  const remove = useMutation(McpClientService.method.deleteMcpClient, { onSuccess: refresh });
  const update = useMutation(McpClientService.method.updateMcpClient, { onSuccess: refresh });
  const reauth = useMutation(McpClientService.method.reauthorize);
  const [editing, setEditing] = useState(false);
  const state = enumWord(ClientState, c.state);
  const quarantined = c.tools.filter((t) => t.state === ToolState.QUARANTINED).length;
  const allTools = c.toolsToExecute.includes("*");
  const toolOn = (name: string) => allTools || c.toolsToExecute.includes(name);
  const setTool = (name: string, on: boolean) => {
    const current = allTools ? c.tools.map((t) => t.name) : c.toolsToExecute;
    const next = on ? [...current, name] : current.filter((t) => t !== name);
    update.mutate({ clientId: c.clientId, client: { toolsToExecute: next }, updateMask: { paths: ["tools_to_execute"] } });
  };
  return (
    <Card>
      <div className="flex flex-wrap items-center justify-between gap-2">
        <h2 className="text-lg font-semibold">
          {c.name} <Badge state={state} />
        </h2>
        <div className="flex flex-wrap gap-2">
          <Button onClick={() => setEditing(!editing)}>{editing ? "Close editor" : "Edit"}</Button>
          <Button onClick={() => reconnect.mutate({ clientId: c.clientId })}>Reconnect</Button>
          {(c.authType === AuthType.OAUTH || state === "needs_reauth") && <Button onClick={() => reauth.mutate({ clientId: c.clientId })}>Authorize again</Button>}
          <Button tone="danger" confirm={`Delete the MCP client ${c.name}?`} onClick={() => remove.mutate({ clientId: c.clientId })}>
            Delete
          </Button>
        </div>
      </div>
      <p className="text-sm text-slate-700">
        {enumWord(ConnectionType, c.connectionType)} · {c.connectionString || c.stdioConfig?.command} · auth {enumWord(AuthType, c.authType)}
      </p>
      {c.lastFailure && state !== "healthy" && (
        <p className="text-sm text-red-900">
          Last failure ({enumWord(FailureStage, c.lastFailure.stage)}): {c.lastFailure.message}
        </p>
      )}
      {Object.keys(c.nodeStates).length > 0 && (
        <p className="text-sm">
          Nodes:{" "}
          {Object.entries(c.nodeStates).map(([node, s]) => (
            <span key={node} className="mr-2">
              {node} <Badge state={enumWord(ClientState, s.state)} />
            </span>
          ))}
        </p>
      )}
      {reauth.data?.authorizeUrl && <AuthorizeLink url={reauth.data.authorizeUrl} oauthConfigId={reauth.data.oauthConfigId} />}
      <ErrorBox error={reconnect.error ?? remove.error ?? update.error ?? reauth.error} />
      {editing && <EditForm client={c} onDone={() => setEditing(false)} />}
      <details className="mt-2">
        <summary className="cursor-pointer text-sm font-medium">
          Tools ({c.tools.length}){quarantined > 0 && `, ${quarantined} quarantined`}
        </summary>
        {c.tools.length === 0 ? (
          <p className="text-sm text-slate-700">No tools listed yet: the list fills once the client connects.</p>
        ) : (
          <ul className="mt-2 space-y-1">
            {c.tools.map((t) => (
              <ToolRow key={t.name} client={c} tool={t} on={toolOn(t.name)} onChange={(on) => setTool(t.name, on)} disabled={update.isPending} />
            ))}
          </ul>
        )}
      </details>
    </Card>
  );
}

/** One tool: its switch, and when it is quarantined, why, with the approval of a changed pinned definition. */
function ToolRow(props: { client: McpClient; tool: Tool; on: boolean; onChange: (on: boolean) => void; disabled: boolean }) {
  const { client: c, tool: t } = props;
  const qc = useQueryClient();
  const approve = useMutation(McpClientService.method.approveMcpTool, { onSuccess: () => qc.invalidateQueries() });
  const quarantined = t.state === ToolState.QUARANTINED;
  return (
    <li className="flex flex-wrap items-center gap-2 text-sm">
      <Switch label={t.name} checked={props.on} onChange={props.onChange} disabled={props.disabled} />
      {quarantined && <Badge state="quarantined" />}
      <span className="text-slate-700">{t.description}</span>
      {quarantined && <span className="w-full text-red-900">Hidden from callers: {t.quarantineReason}</span>}
      {quarantined && c.toolPinning && t.quarantineReason.includes("definition changed since it was pinned") && (
        <Button confirm={`Pin the current definition of ${t.name} and show it to callers again?`} onClick={() => approve.mutate({ clientId: c.clientId, tool: t.name })} disabled={approve.isPending}>
          Approve new definition
        </Button>
      )}
      <ErrorBox error={approve.error} />
    </li>
  );
}

/** The authorize button of an OAuth client, the live status of its authorization, and the step that connects it once authorized. */
function AuthorizeLink(props: { url: string; oauthConfigId: string }) {
  const qc = useQueryClient();
  const status = useQuery(OauthService.method.getOauthConfigStatus, { id: props.oauthConfigId }, { enabled: props.oauthConfigId !== "", refetchInterval: 2000 });
  const complete = useMutation(McpClientService.method.completeOauth, { onSuccess: () => qc.invalidateQueries() });
  return (
    <div className="my-2 space-y-2 text-sm">
      <p>
        <a href={props.url} target="_blank" rel="noreferrer" className="rounded bg-blue-700 px-3 py-1.5 font-medium text-white">
          Authorize with the provider
        </a>{" "}
        {status.data && <span role="status">Authorization: {status.data.status}</span>}
      </p>
      {status.data?.status === "authorized" && !complete.isSuccess && (
        <Button tone="primary" disabled={complete.isPending} onClick={() => complete.mutate({ oauthConfigId: props.oauthConfigId })}>
          Finish connecting
        </Button>
      )}
      {complete.data && <p role="status">{complete.data.message || `Connected with ${complete.data.toolsCount} tools.`}</p>}
      <ErrorBox error={status.error ?? complete.error} />
    </div>
  );
}

/** Creates a client; an OAuth client answers with the authorize URL to open. */
function CreateForm(props: { onDone: () => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [connection, setConnection] = useState(String(ConnectionType.HTTP));
  const [url, setUrl] = useState("");
  const [command, setCommand] = useState("");
  const [args, setArgs] = useState("");
  const [auth, setAuth] = useState(String(AuthType.NONE));
  const [headers, setHeaders] = useState("");
  const [userKeys, setUserKeys] = useState("");
  const [samples, setSamples] = useState("");
  const [oauth, setOauth] = useState({ clientId: "", clientSecret: "", authorizeUrl: "", tokenUrl: "", scopes: "" });
  const [formError, setFormError] = useState<Error | null>(null);
  const [created, setCreated] = useState<CreateMcpClientResponse | null>(null);
  const create = useMutation(McpClientService.method.createMcpClient, {
    onSuccess: async (res) => {
      await qc.invalidateQueries();
      if (res.authorizeUrl !== "") setCreated(res);
      else props.onDone();
    },
  });
  const authType = Number(auth) as AuthType;
  const isStdio = Number(connection) === ConnectionType.STDIO;
  const usesOauth = authType === AuthType.OAUTH || authType === AuthType.PER_USER_OAUTH;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setFormError(null);
    let headerMap: Record<string, string>;
    let sampleMap: Record<string, string>;
    try {
      headerMap = parseHeaderLines(headers);
      sampleMap = parseHeaderLines(samples);
    } catch (err) {
      setFormError(err as Error);
      return;
    }
    create.mutate({
      client: {
        name,
        connectionType: Number(connection) as ConnectionType,
        ...(isStdio ? { stdioConfig: { command, args: splitList(args) } } : { connectionString: url }),
        authType,
        headers: Object.fromEntries(Object.entries(headerMap).map(([k, v]) => [k, { value: v }])),
        perUserHeaderKeys: authType === AuthType.PER_USER_HEADERS ? splitList(userKeys) : [],
        userHeaders: authType === AuthType.PER_USER_HEADERS ? sampleMap : {},
        toolsToExecute: ["*"],
        ...(usesOauth ? { oauthConfig: { clientId: oauth.clientId, clientSecret: oauth.clientSecret, authorizeUrl: oauth.authorizeUrl, tokenUrl: oauth.tokenUrl, scopes: splitList(oauth.scopes) } } : {}),
      },
    });
  };
  if (created !== null) {
    return (
      <Card title="Authorize the new client">
        <p className="text-sm">{created.message}</p>
        <AuthorizeLink url={created.authorizeUrl} oauthConfigId={created.oauthConfigId} />
        <Button onClick={props.onDone}>Done</Button>
      </Card>
    );
  }
  return (
    <Card title="Add an MCP client">
      <form onSubmit={submit} className="grid gap-3 md:grid-cols-2">
        <TextField label="Name" value={name} onChange={setName} required hint="Letters, digits and underscores; tools appear as <name>-<tool>." />
        <Select label="Connection" value={connection} onChange={setConnection} options={CONNECTIONS} />
        {isStdio ? (
          <>
            <TextField label="Command" value={command} onChange={setCommand} required />
            <TextField label="Arguments" value={args} onChange={setArgs} hint="Comma-separated." />
          </>
        ) : (
          <TextField label="URL" value={url} onChange={setUrl} required placeholder="https://mcp.example.com/mcp" />
        )}
        <Select label="Auth type" value={auth} onChange={setAuth} options={AUTH_TYPES} />
        {authType !== AuthType.NONE && <TextArea label="Headers" value={headers} onChange={setHeaders} hint='One "Name: value" per line, sent on every upstream request.' />}
        {authType === AuthType.PER_USER_HEADERS && (
          <>
            <TextField label="Per-user header names" value={userKeys} onChange={setUserKeys} required hint="Comma-separated; each caller supplies their own values." />
            <TextArea label="Sample per-user values" value={samples} onChange={setSamples} hint='"Name: value" per line; used once to check the server and list its tools, never stored.' />
          </>
        )}
        {usesOauth && (
          <>
            <TextField label="OAuth client id" value={oauth.clientId} onChange={(v) => setOauth({ ...oauth, clientId: v })} hint="Empty: registered dynamically." />
            <TextField label="OAuth client secret" type="password" value={oauth.clientSecret} onChange={(v) => setOauth({ ...oauth, clientSecret: v })} />
            <TextField label="Authorize URL" value={oauth.authorizeUrl} onChange={(v) => setOauth({ ...oauth, authorizeUrl: v })} hint="Empty: discovered from the server." />
            <TextField label="Token URL" value={oauth.tokenUrl} onChange={(v) => setOauth({ ...oauth, tokenUrl: v })} />
            <TextField label="Scopes" value={oauth.scopes} onChange={(v) => setOauth({ ...oauth, scopes: v })} hint="Comma-separated." />
          </>
        )}
        <div className="flex items-end gap-2 md:col-span-2">
          <Button type="submit" tone="primary" disabled={create.isPending}>
            Create client
          </Button>
          <Button onClick={props.onDone}>Cancel</Button>
        </div>
        <div className="md:col-span-2">
          <ErrorBox error={formError ?? create.error} />
        </div>
      </form>
    </Card>
  );
}

/** Edits what can change after creation; header values shown as stored (redacted) keep their secrets. */
function EditForm(props: { client: McpClient; onDone: () => void }) {
  const c = props.client;
  const qc = useQueryClient();
  const [name, setName] = useState(c.name);
  const [headers, setHeaders] = useState(
    Object.entries(c.headers)
      .map(([k, v]) => `${k}: ${v.value}`)
      .join("\n"),
  );
  const [userKeys, setUserKeys] = useState(c.perUserHeaderKeys.join(", "));
  const [autoTools, setAutoTools] = useState(c.toolsToAutoExecute.join(", "));
  const [sync, setSync] = useState(String(c.toolSyncInterval));
  const [pinning, setPinning] = useState(c.toolPinning);
  const [formError, setFormError] = useState<Error | null>(null);
  const update = useMutation(McpClientService.method.updateMcpClient, {
    onSuccess: async () => {
      await qc.invalidateQueries();
      props.onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setFormError(null);
    let headerMap: Record<string, string>;
    try {
      headerMap = parseHeaderLines(headers);
    } catch (err) {
      setFormError(err as Error);
      return;
    }
    const paths = ["name", "headers", "tools_to_auto_execute", "tool_sync_interval", "tool_pinning"];
    if (c.authType === AuthType.PER_USER_HEADERS) paths.push("per_user_header_keys");
    update.mutate({
      clientId: c.clientId,
      client: {
        name,
        headers: Object.fromEntries(Object.entries(headerMap).map(([k, v]) => [k, { value: v }])),
        perUserHeaderKeys: splitList(userKeys),
        toolsToAutoExecute: splitList(autoTools),
        toolSyncInterval: Number(sync),
        toolPinning: pinning,
      },
      updateMask: { paths },
    });
  };
  return (
    <form onSubmit={submit} className="my-3 grid gap-3 border-t border-slate-200 pt-3 md:grid-cols-2">
      <TextField label="Name" value={name} onChange={setName} required />
      <TextField label="Tool sync interval (minutes)" value={sync} onChange={setSync} hint="0 uses the global interval; -1 turns syncing off." />
      <TextArea label="Headers" value={headers} onChange={setHeaders} hint='"Name: value" per line; a value left as <redacted> keeps the stored one.' />
      {c.authType === AuthType.PER_USER_HEADERS && <TextField label="Per-user header names" value={userKeys} onChange={setUserKeys} />}
      <TextField label="Auto-executed tools" value={autoTools} onChange={setAutoTools} hint='Comma-separated tool names, or "*".' />
      <Switch label="Pin tool definitions (a changed definition is quarantined until approved)" checked={pinning} onChange={setPinning} />
      <div className="flex items-end gap-2 md:col-span-2">
        <Button type="submit" tone="primary" disabled={update.isPending}>
          Save changes
        </Button>
        <Button onClick={props.onDone}>Cancel</Button>
      </div>
      <div className="md:col-span-2">
        <ErrorBox error={formError ?? update.error} />
      </div>
    </form>
  );
}
