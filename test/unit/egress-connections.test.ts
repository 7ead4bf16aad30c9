/**
 * The egress-checked fetch on loopback: a refused destination rejects with the policy's own error (code
 * EGRESS_DENIED) before any connection opens, and a permitted one is fetched as usual.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { egressFetch } from "../../src/config/egress-connections.js";
import { EgressPolicy, egressPolicy, installEgressPolicy } from "../../src/config/egress-policy.js";

let server: Server;
let port: number;
let connections = 0;
const previous = egressPolicy();

before(async () => {
  server = createServer((_req, res) => res.end("ok"));
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  installEgressPolicy(new EgressPolicy({ allow: [], deny: ["127.0.0.1/32", "::1/128", "blocked.localhost"] }));
});

after(async () => {
  installEgressPolicy(previous);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

for (const [what, host] of [
  ["a denied literal address", "127.0.0.1"],
  ["a name that resolves to a denied address", "localhost"],
  ["a denied name", "blocked.localhost"],
]) {
  test(`${what} is refused with EGRESS_DENIED and no connection is opened`, async () => {
    const before = connections;
    await assert.rejects(egressFetch(`http://${host}:${port}/`), (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, "EGRESS_DENIED");
      assert.match(err.message, /connection refused by the egress policy: .* \(EGRESS_DENIED\)$/);
      return true;
    });
    assert.equal(connections, before);
  });
}

test("a permitted destination is fetched", async () => {
  installEgressPolicy(new EgressPolicy({ allow: [], deny: ["127.0.0.2/32"] }));
  try {
    const res = await egressFetch(`http://127.0.0.1:${port}/`);
    assert.equal(await res.text(), "ok");
  } finally {
    installEgressPolicy(new EgressPolicy({ allow: [], deny: ["127.0.0.1/32", "::1/128", "blocked.localhost"] }));
  }
});
