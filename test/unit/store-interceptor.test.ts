import assert from "node:assert/strict";
import { test } from "node:test";
import { createClient, type HandlerContext } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ClusterService } from "../../gen/gw/admin/v1/cluster_pb.js";
import { createInProcessTransport } from "../../src/server/in-process-transport.js";
import { kEntityManager } from "../../src/services/context.js";
import { storeInterceptor } from "../../src/services/store-interceptor.js";
import type { Store } from "../../src/store/index.js";

/** A store whose forks are counted; each fork is a distinct object. */
function countingStore(): { store: Store; forks: () => number } {
  let forks = 0;
  const store = { fork: () => ({ fork: ++forks }) as unknown as EntityManager } as unknown as Store;
  return { store, forks: () => forks };
}

/** Calls ListNodes once through the interceptor, with `listNodes` as the implementation. */
async function call(store: Store, listNodes: (ctx: HandlerContext) => void): Promise<void> {
  const transport = createInProcessTransport(
    (router) =>
      router.service(ClusterService, {
        listNodes: (_req, ctx) => {
          listNodes(ctx);
          return {};
        },
      }),
    [storeInterceptor(store)],
  );
  await createClient(ClusterService, transport).listNodes({});
}

test("forks no entity manager for a call that never uses the store", async () => {
  const { store, forks } = countingStore();
  await call(store, () => undefined);
  assert.equal(forks(), 0);
});

test("gives every use of the store in one call the same entity manager", async () => {
  const { store, forks } = countingStore();
  let first: EntityManager | undefined;
  let second: EntityManager | undefined;
  await call(store, (ctx) => {
    first = ctx.values.get(kEntityManager)?.();
    second = ctx.values.get(kEntityManager)?.();
  });
  assert.equal(forks(), 1);
  assert.ok(first !== undefined && first === second);
});

test("gives each call an entity manager of its own", async () => {
  const { store, forks } = countingStore();
  const seen: (EntityManager | undefined)[] = [];
  for (let i = 0; i < 2; i++) await call(store, (ctx) => seen.push(ctx.values.get(kEntityManager)?.()));
  assert.equal(forks(), 2);
  assert.notEqual(seen[0], seen[1]);
});
