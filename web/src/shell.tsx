/** The frame around every page: sign-in gate, the auth-off banner, navigation and sign-out. */
import { useState, type FormEvent } from "react";
import { Code, ConnectError } from "@connectrpc/connect";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { Link, Outlet } from "@tanstack/react-router";
import { SessionService } from "../../gen/gw/admin/v1/session_pb";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb";
import { PAGES } from "./router";
import { setSessionToken } from "./transport";
import { Button, ErrorBox, TextField } from "./ui/kit";

/** Decides between the sign-in form and the dashboard by asking an admin RPC. */
export function Shell() {
  const probe = useQuery(SettingsService.method.getConfig, {}, { refetchInterval: false });
  const options = useQuery(SessionService.method.getSignInOptions, {}, { refetchInterval: false });
  if (probe.isPending) return <p className="p-6">Loading…</p>;
  if (probe.error instanceof ConnectError && probe.error.code === Code.Unauthenticated) return <SignIn />;
  // An SSO sign-in rides on a cookie, not a token: only the server knows whether admin auth is off.
  const authOff = probe.isSuccess && options.data?.password === false;
  return (
    <div className="flex min-h-screen flex-col md:flex-row">
      <a href="#main" className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:bg-white focus:p-2">
        Skip to content
      </a>
      <nav aria-label="Dashboard" className="border-b border-slate-200 bg-white p-3 md:min-h-screen md:w-56 md:border-b-0 md:border-r">
        <p className="mb-2 font-semibold">AI gateway</p>
        <ul className="flex flex-wrap gap-1 md:flex-col">
          {PAGES.map((p) => (
            <li key={p.path}>
              <Link to={p.path} activeOptions={{ exact: true }} className="block rounded px-2 py-1 text-sm hover:bg-slate-100 focus-visible:outline-2 focus-visible:outline-blue-700" activeProps={{ className: "bg-blue-50 font-semibold text-blue-900", "aria-current": "page" }}>
                {p.label}
              </Link>
            </li>
          ))}
        </ul>
        {!authOff && <SignOut />}
      </nav>
      <main id="main" className="min-w-0 flex-1 p-4 md:p-6">
        {authOff && (
          <p role="status" className="mb-4 rounded border-l-4 border-amber-600 bg-amber-50 p-2 text-sm text-amber-950">
            Admin authentication is off: anyone who can reach this gateway can change it. Set <code>auth_config.is_enabled</code> in the config file to require a sign-in.
          </p>
        )}
        {probe.isError && !(probe.error instanceof ConnectError && probe.error.code === Code.Unauthenticated) && <ErrorBox error={probe.error} />}
        <Outlet />
      </main>
    </div>
  );
}

/** The admin sign-in form. */
function SignIn() {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const client = useQueryClient();
  const login = useMutation(SessionService.method.login, {
    onSuccess: async (res) => {
      setSessionToken(res.token);
      await client.resetQueries();
    },
  });
  // Public: the page learns before any session whether to offer the SSO login.
  const options = useQuery(SessionService.method.getSignInOptions, {}, { refetchInterval: false });
  const sso = options.data?.sso === true ? options.data.ssoLoginUrl : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    login.mutate({ username, password });
  };
  return (
    <main id="main" className="mx-auto mt-16 max-w-sm p-4">
      <h1 className="mb-4 text-2xl font-semibold">Sign in to the gateway</h1>
      <form onSubmit={submit} className="space-y-3 rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
        <TextField label="Username" value={username} onChange={setUsername} required />
        <TextField label="Password" type="password" value={password} onChange={setPassword} required />
        <ErrorBox error={login.error} />
        <Button type="submit" tone="primary" disabled={login.isPending}>
          Sign in
        </Button>
      </form>
      {sso !== null && (
        <div className="mt-4 rounded-lg border border-slate-200 bg-white p-4 text-center shadow-sm">
          <a href={`${sso}?return_to=${encodeURIComponent(location.pathname)}`} className="inline-block rounded bg-blue-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-blue-800 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-700">
            Sign in with SSO
          </a>
        </div>
      )}
    </main>
  );
}

/** Ends the admin session on the server and forgets the token. */
function SignOut() {
  const client = useQueryClient();
  const logout = useMutation(SessionService.method.logout, {
    onSettled: async () => {
      setSessionToken(null);
      await client.resetQueries();
    },
  });
  return (
    <div className="mt-4">
      <Button onClick={() => logout.mutate({})}>Sign out</Button>
    </div>
  );
}
