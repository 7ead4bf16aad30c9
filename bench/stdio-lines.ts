/**
 * What reading one large answer from a stdio MCP server costs the gateway's event loop: a tools/call answer of
 * 1, 4 and 9 MiB arriving in the 64 KiB chunks a pipe delivers, cut into its line and parsed into a JSON-RPC
 * message by the gateway's line reader (src/mcp/stdio-lines.ts) and, to compare, by the MCP SDK's ReadBuffer,
 * which joins the buffer again at every chunk and searches it whole for the line end. Not a test: it prints the
 * milliseconds of each, three rounds per size, all of it synchronous work on the serving thread.
 *
 *   node --import tsx bench/stdio-lines.ts
 */
import { deserializeMessage, ReadBuffer } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { MAX_UPSTREAM_MESSAGE_BYTES } from "../src/mcp/message-bound.js";
import { LineReader } from "../src/mcp/stdio-lines.js";

const CHUNK_BYTES = 64 * 1024;
const ROUNDS = 3;

/** An answer of `mib` MiB of text as one line, in pipe-sized chunks. */
function chunksOf(mib: number): Buffer[] {
  const answer = { result: { content: [{ type: "text", text: "x".repeat(mib * 1024 * 1024) }] }, jsonrpc: "2.0", id: 1 };
  const line = Buffer.from(`${JSON.stringify(answer)}\n`);
  const chunks: Buffer[] = [];
  for (let at = 0; at < line.length; at += CHUNK_BYTES) chunks.push(line.subarray(at, at + CHUNK_BYTES));
  return chunks;
}

/** Milliseconds `read` takes, and that it produced one message. */
function timed(read: () => number): number {
  const started = performance.now();
  const messages = read();
  const ms = performance.now() - started;
  if (messages !== 1) throw new Error(`expected one message, read ${messages}`);
  return ms;
}

for (const mib of [1, 4, 9]) {
  const chunks = chunksOf(mib);
  for (let round = 1; round <= ROUNDS; round++) {
    const sdk = timed(() => {
      const buffer = new ReadBuffer();
      let messages = 0;
      for (const chunk of chunks) {
        buffer.append(chunk);
        while (buffer.readMessage() !== null) messages++;
      }
      return messages;
    });
    const own = timed(() => {
      let messages = 0;
      const reader = new LineReader(MAX_UPSTREAM_MESSAGE_BYTES, {
        line: (text) => {
          deserializeMessage(text);
          messages++;
        },
        oversized: () => undefined,
      });
      for (const chunk of chunks) reader.push(chunk);
      return messages;
    });
    console.log(`${mib} MiB answer in ${chunks.length} chunks, round ${round}: the SDK's ReadBuffer ${sdk.toFixed(1)} ms, the gateway's line reader ${own.toFixed(1)} ms`);
  }
}
