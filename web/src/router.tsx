/** The dashboard's routes; each page is its own chunk, loaded when first opened. */
import { createRootRoute, createRoute, createRouter, lazyRouteComponent } from "@tanstack/react-router";
import { Shell } from "./shell";

const root = createRootRoute({ component: Shell });

/** The pages in navigation order: path, label, and the module that draws it. */
export const PAGES = [
  { path: "/", label: "Overview", component: lazyRouteComponent(() => import("./routes/overview"), "OverviewPage") },
  { path: "/mcp-clients", label: "MCP clients", component: lazyRouteComponent(() => import("./routes/mcp-clients"), "McpClientsPage") },
  { path: "/mcp-sessions", label: "MCP sessions", component: lazyRouteComponent(() => import("./routes/mcp-sessions"), "McpSessionsPage") },
  { path: "/virtual-mcp-servers", label: "Virtual MCP servers", component: lazyRouteComponent(() => import("./routes/virtual-mcp-servers"), "VirtualMcpServersPage") },
  { path: "/virtual-keys", label: "Virtual keys", component: lazyRouteComponent(() => import("./routes/virtual-keys"), "VirtualKeysPage") },
  { path: "/providers", label: "Providers & models", component: lazyRouteComponent(() => import("./routes/providers"), "ProvidersPage") },
  { path: "/routing-rules", label: "Routing rules", component: lazyRouteComponent(() => import("./routes/routing-rules"), "RoutingRulesPage") },
  { path: "/guardrails", label: "Guardrails", component: lazyRouteComponent(() => import("./routes/guardrails"), "GuardrailsPage") },
  { path: "/teams", label: "Teams & customers", component: lazyRouteComponent(() => import("./routes/teams"), "TeamsPage") },
  { path: "/load-balancer", label: "Load balancer", component: lazyRouteComponent(() => import("./routes/load-balancer"), "LoadBalancerPage") },
  { path: "/settings", label: "Settings", component: lazyRouteComponent(() => import("./routes/settings"), "SettingsPage") },
] as const;

const tree = root.addChildren(PAGES.map((p) => createRoute({ getParentRoute: () => root, path: p.path, component: p.component })));

/** The router, mounted under /workspace/ where the gateway serves the app. */
export const router = createRouter({ routeTree: tree, basepath: "/workspace" });

declare module "@tanstack/react-router" {
  interface Register {
    router: typeof router;
  }
}
