/** The dashboard's entry: query client, Connect transport and the router under /workspace/. */
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { TransportProvider } from "@connectrpc/connect-query";
import { Code, ConnectError } from "@connectrpc/connect";
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { router } from "./router";
import { sessionToken, setSessionToken, transport } from "./transport";
import "./styles.css";

/** A session that expired or was revoked: forget it, and the shell shows the sign-in form again. */
function signOutOnUnauthenticated(err: unknown): void {
  if (err instanceof ConnectError && err.code === Code.Unauthenticated && sessionToken() !== null) {
    setSessionToken(null);
    void queryClient.resetQueries();
  }
}

// Lists stay live: every query refetches on focus and every 5 s, as an operator watches states change.
const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError: signOutOnUnauthenticated }),
  mutationCache: new MutationCache({ onError: signOutOnUnauthenticated }),
  defaultOptions: {
    queries: { refetchInterval: 5000, refetchOnWindowFocus: true, retry: false },
  },
});

const root = document.getElementById("root");
if (root === null) throw new Error("the page has no #root element");
createRoot(root).render(
  <StrictMode>
    <TransportProvider transport={transport}>
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </TransportProvider>
  </StrictMode>,
);
