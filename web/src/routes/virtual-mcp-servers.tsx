/** Virtual MCP servers: chosen tools, resources and prompts of several MCP clients served as one at /mcp/<name>; create, edit and delete. */
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { McpClientService } from "../../../gen/gw/admin/v1/mcp_client_pb";
import { VirtualMcpServerService, type VirtualMcpServer } from "../../../gen/gw/admin/v1/virtual_mcp_server_pb";
import { splitList } from "../ui/lines";
import { Button, Card, Empty, ErrorBox, Page, Select, Switch, Table, Td, TextField } from "../ui/kit";

/** Every field the form edits, so an edit sends all of them. */
const EDITED_FIELDS = ["description", "members"];

/** What a member's tools say, in words. */
function toolsText(tools: readonly string[]): string {
  if (tools.includes("*")) return "every tool";
  return tools.length === 0 ? "no tools" : tools.join(", ");
}

/** The URL MCP clients connect to. */
function endpointOf(name: string): string {
  return `${location.origin}/mcp/${name}`;
}

/** The virtual MCP servers page. */
export function VirtualMcpServersPage() {
  const list = useQuery(VirtualMcpServerService.method.listVirtualMcpServers, {});
  const [creating, setCreating] = useState(false);
  const servers = list.data?.virtualServers ?? [];
  return (
    <Page title="Virtual MCP servers" actions={<Button tone="primary" onClick={() => setCreating(!creating)}>{creating ? "Close form" : "Add virtual server"}</Button>}>
      {creating && (
        <Card title="Add a virtual MCP server">
          <ServerForm onDone={() => setCreating(false)} />
        </Card>
      )}
      <ErrorBox error={list.error} />
      {list.isSuccess && servers.length === 0 && (
        <Empty>No virtual MCP servers. Add one to offer chosen tools, resources and prompts of your MCP clients as a single MCP server at /mcp/&lt;name&gt;.</Empty>
      )}
      {servers.length > 0 && (
        <Table caption="Virtual MCP servers" head={["Name", "Endpoint", "Members", "Actions"]}>
          {servers.map((server) => (
            <ServerRow key={server.name} server={server} />
          ))}
        </Table>
      )}
    </Page>
  );
}

/** One server, with its editor below it when open. */
function ServerRow(props: { server: VirtualMcpServer }) {
  const s = props.server;
  const qc = useQueryClient();
  const remove = useMutation(VirtualMcpServerService.method.deleteVirtualMcpServer, { onSuccess: () => qc.invalidateQueries() });
  const [editing, setEditing] = useState(false);
  return (
    <>
      <tr>
        <Td>
          <span className="font-medium">{s.name}</span>
          <div className="text-xs text-slate-700">{s.description}</div>
        </Td>
        <Td>
          <code className="break-all text-xs">{endpointOf(s.name)}</code>
        </Td>
        <Td>
          <ul className="space-y-1">
            {s.members.map((m) => (
              <li key={m.client}>
                <span className="font-medium">{m.client}</span>: {toolsText(m.tools)}
                {m.resources === false && ", no resources"}
                {m.prompts === false && ", no prompts"}
              </li>
            ))}
          </ul>
        </Td>
        <Td>
          <div className="flex flex-wrap gap-2">
            <Button onClick={() => setEditing(!editing)}>{editing ? "Close editor" : "Edit"}</Button>
            <Button tone="danger" confirm={`Delete the virtual MCP server ${s.name}? Clients using /mcp/${s.name} lose it.`} onClick={() => remove.mutate({ name: s.name })}>
              Delete
            </Button>
          </div>
          <ErrorBox error={remove.error} />
        </Td>
      </tr>
      {editing && (
        <tr>
          <td colSpan={4} className="bg-slate-50 p-3">
            <ServerForm server={s} onDone={() => setEditing(false)} />
          </td>
        </tr>
      )}
    </>
  );
}

/** One member as the form holds it. */
interface MemberDraft {
  client: string;
  /** "*", a comma-separated list of tools, or "" for none. */
  tools: string;
  resources: boolean;
  prompts: boolean;
}

function memberDrafts(server: VirtualMcpServer | undefined): MemberDraft[] {
  if (server === undefined) return [{ client: "", tools: "*", resources: true, prompts: true }];
  return server.members.map((m) => ({ client: m.client, tools: m.tools.join(", "), resources: m.resources !== false, prompts: m.prompts !== false }));
}

/** Creates a server, or edits `server`; the server checks the clients and tools named and its error is shown. */
function ServerForm(props: { server?: VirtualMcpServer; onDone: () => void }) {
  const qc = useQueryClient();
  const clients = useQuery(McpClientService.method.listMcpClients, {}, { refetchInterval: false });
  const [name, setName] = useState(props.server?.name ?? "");
  const [description, setDescription] = useState(props.server?.description ?? "");
  const [members, setMembers] = useState(() => memberDrafts(props.server));
  const done = {
    onSuccess: async () => {
      await qc.invalidateQueries();
      props.onDone();
    },
  };
  const create = useMutation(VirtualMcpServerService.method.createVirtualMcpServer, done);
  const update = useMutation(VirtualMcpServerService.method.updateVirtualMcpServer, done);
  const clientOptions = [["", "Choose a client"] as const, ...(clients.data?.clients ?? []).map((c) => [c.name, c.name] as const)];
  const setMember = (index: number, patch: Partial<MemberDraft>) => setMembers(members.map((m, i) => (i === index ? { ...m, ...patch } : m)));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const server = {
      name,
      description,
      members: members.map((m) => ({ client: m.client, tools: splitList(m.tools), resources: m.resources, prompts: m.prompts })),
    };
    if (props.server) update.mutate({ name: props.server.name, virtualServer: server, updateMask: { paths: EDITED_FIELDS } });
    else create.mutate({ virtualServer: server });
  };
  return (
    <form onSubmit={submit} className="grid gap-3 md:grid-cols-2">
      {props.server === undefined ? (
        <TextField label="Name" value={name} onChange={setName} required hint="Letters, digits and underscores; served at /mcp/<name>." />
      ) : (
        <p className="text-sm">
          Served at <code>{endpointOf(props.server.name)}</code>
        </p>
      )}
      <TextField label="Description" value={description} onChange={setDescription} />
      <fieldset className="flex flex-col gap-3 md:col-span-2">
        <legend className="text-sm font-medium">Members</legend>
        {members.map((m, index) => {
          const known = clients.data?.clients.find((c) => c.name === m.client);
          return (
            <div key={index} className="grid gap-2 rounded border border-slate-200 p-2 md:grid-cols-2">
              <Select label={`Client of member ${index + 1}`} value={m.client} onChange={(client) => setMember(index, { client })} options={clientOptions} />
              <TextField
                label={`Tools of member ${index + 1}`}
                value={m.tools}
                onChange={(tools) => setMember(index, { tools })}
                hint={`"*" for every tool, names separated by commas, or empty for none.${known && known.tools.length > 0 ? ` Its tools: ${known.tools.map((t) => t.name).join(", ")}.` : ""}`}
              />
              <div className="flex flex-wrap gap-4">
                <Switch label={`Resources of member ${index + 1}`} checked={m.resources} onChange={(resources) => setMember(index, { resources })} />
                <Switch label={`Prompts of member ${index + 1}`} checked={m.prompts} onChange={(prompts) => setMember(index, { prompts })} />
              </div>
              <div>
                <Button tone="danger" onClick={() => setMembers(members.filter((_, i) => i !== index))} disabled={members.length === 1}>
                  Remove member {index + 1}
                </Button>
              </div>
            </div>
          );
        })}
        <div>
          <Button onClick={() => setMembers([...members, { client: "", tools: "*", resources: true, prompts: true }])}>Add member</Button>
        </div>
        <p className="text-xs text-slate-700">With one member its names stay as they are; with several, tools and prompts are named &lt;client&gt;-&lt;name&gt;, as on /mcp.</p>
      </fieldset>
      <div className="md:col-span-2">
        <ErrorBox error={clients.error ?? create.error ?? update.error} />
      </div>
      <div className="flex gap-2 md:col-span-2">
        <Button type="submit" tone="primary" disabled={create.isPending || update.isPending}>
          Save virtual server
        </Button>
        <Button onClick={props.onDone}>Cancel</Button>
      </div>
    </form>
  );
}
