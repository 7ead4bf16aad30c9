/** The relay test upstream over stdio: `node --import tsx test/helpers/relay-upstream-stdio.ts`. One process, one session. */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createRelayUpstream, UpstreamState } from "./relay-upstream.js";

await createRelayUpstream(new UpstreamState()).connect(new StdioServerTransport());
