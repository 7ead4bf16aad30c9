/** One unit of work per call (MikroORM's guide): every call gets its own EntityManager fork. */
import type { Interceptor } from "@connectrpc/connect";
import type { Store } from "../store/index.js";
import { kEntityManager } from "./context.js";

/** Creates the interceptor. */
export function storeInterceptor(store: Store): Interceptor {
  return (next) => (req) => {
    req.contextValues.set(kEntityManager, store.fork());
    return next(req);
  };
}
