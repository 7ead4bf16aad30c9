/**
 * One unit of work per call (MikroORM's guide): a call's first use of the store forks its EntityManager and
 * every later use in the call gets the same one. A call that never touches the store (a tool call, a catalog
 * read served from memory) forks none.
 */
import type { Interceptor } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Store } from "../store/index.js";
import { kEntityManager } from "./context.js";

/** Creates the interceptor. */
export function storeInterceptor(store: Store): Interceptor {
  return (next) => (req) => {
    let em: EntityManager | undefined;
    req.contextValues.set(kEntityManager, () => (em ??= store.fork()));
    return next(req);
  };
}
