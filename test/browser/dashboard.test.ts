/**
 * The web dashboard in headless Chromium against a real gateway with admin auth on, the mock OpenAI
 * upstream and mock MCP servers: serving and caching, the size budget, sign-in, an MCP client turning
 * healthy, a virtual key's value shown once, a routing rule refused for bad CEL then saved, a guardrail
 * refused for a bad pattern then saved and edited, a virtual MCP server refused for an unknown tool then
 * saved, a per-user credential flow finished and listed, the
 * overview moving with traffic, and every route checked with axe-core at desktop and phone widths
 * (screenshots in test-artifacts/dashboard).
 */
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { INITIAL_JS_BUDGET_BYTES, initialJs } from "../../web/bundle-budget.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";
import { oauthSuite } from "../helpers/oauth-clients.js";
import { fileKey, sdk } from "../helpers/inference.js";
import { SKIP_IN_REPEATED_RUN } from "../helpers/repeated-run.js";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { signInAtIdp } from "../helpers/idp-sign-in.js";

const WEB_DIR = fileURLToPath(new URL("../../dist/web", import.meta.url));
const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/dashboard", import.meta.url));
const ADMIN = { username: "admin", password: "dashboard-pw" };
const ALICE = "sk-gw-dash-alice";
const ALICE_TOKEN = "alice-upstream-token";
const ALICE_NEW_TOKEN = "alice-rotated-upstream-token";
/** Alice's key value: rotated in the dashboard by one of the tests. */
let aliceKey = ALICE;
const WAIT = { timeout: 60_000 };

/** The dashboard's routes, as its navigation names them. */
const ROUTES = [
  ["", "Overview"],
  ["mcp-clients", "MCP clients"],
  ["mcp-sessions", "MCP sessions"],
  ["virtual-mcp-servers", "Virtual MCP servers"],
  ["virtual-keys", "Virtual keys"],
  ["providers", "Providers & models"],
  ["routing-rules", "Routing rules"],
  ["guardrails", "Guardrails"],
  ["teams", "Teams & customers"],
  ["load-balancer", "Load balancer"],
  ["settings", "Settings"],
] as const;

let openai: MockUpstream;
let plain: McpFixture;
let perUser: McpFixture;
let app: TestApp;
let browser: TestBrowser;
let page: Page;
const consoleErrors: string[] = [];
/** Responses the page got that no step asked for: any 404 or 5xx. */
const badResponses: string[] = [];

before(async () => {
  openai = await startMockOpenAi();
  plain = await startMcpFixture();
  perUser = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["admin-sample", ALICE_TOKEN, ALICE_NEW_TOKEN] } });
  app = await startApp({
    auth: { enabled: true, username: ADMIN.username, password: ADMIN.password, sessionTtlMs: 3_600_000 },
    inference: inferenceOptionsFromFile({ openai: { keys: [fileKey("k1")], network_config: { base_url: openai.url } } }, [
      { id: "vk-alice", name: "alice", value: ALICE, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"] }], mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] },
    ]),
  });
  browser = await launchBrowser();
  page = await browser.context.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  page.on("console", (msg) => {
    // Chromium logs every 4xx the API answers (the sign-in probe, the refused CEL); those are checked as responses.
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) consoleErrors.push(msg.text());
  });
  page.on("response", (res) => {
    if (res.status() === 404 || res.status() >= 500) badResponses.push(`${res.status()} ${res.url()}`);
  });
  page.on("pageerror", (err) => consoleErrors.push(err.message));
  // Destructive actions ask first; the tests accept.
  page.on("dialog", (dialog) => void dialog.accept());
  await mkdir(ARTIFACTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  await app?.stop();
  await plain?.close();
  await perUser?.close();
  await openai?.close();
});

/** Opens a dashboard route by its navigation link. */
async function openRoute(label: string): Promise<void> {
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: label, exact: true }).click();
  await page.getByRole("heading", { level: 1, name: label }).waitFor(WAIT);
}

describe("serving", () => {
  test("/ redirects to /workspace/", async () => {
    const res = await fetch(`${app.url}/`, { redirect: "manual" });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("location"), "/workspace/");
  });

  test("a method other than GET or HEAD is refused with 405", async () => {
    const res = await fetch(`${app.url}/workspace/`, { method: "POST" });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "GET, HEAD");
  });

  test("a route under /workspace/ is the app's page, never cached", async () => {
    const res = await fetch(`${app.url}/workspace/virtual-keys`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/html/);
    assert.equal(res.headers.get("cache-control"), "no-cache");
    assert.match(await res.text(), /<div id="root">/);
  });

  test("hashed assets are cached for a year and sent precompressed", async () => {
    const { files } = await initialJs(WEB_DIR);
    const asset = files[0];
    assert.ok(asset !== undefined);
    const gz = await fetch(`${app.url}/workspace/${asset}`, { headers: { "accept-encoding": "gzip" } });
    assert.equal(gz.status, 200);
    assert.equal(gz.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.match(gz.headers.get("content-type") ?? "", /javascript/);
    // fetch undoes the encoding it announced; the header says what was sent.
    assert.equal(gz.headers.get("content-encoding"), "gzip");
    const br = await fetch(`${app.url}/workspace/${asset}`, { headers: { "accept-encoding": "br" } });
    assert.equal(br.headers.get("content-encoding"), "br");
  });

  test("an unknown asset is a 404, not the page", async () => {
    const res = await fetch(`${app.url}/workspace/assets/missing-0000.js`);
    assert.equal(res.status, 404);
  });

  test("the per-user credential page keeps its own route", async () => {
    const res = await fetch(`${app.url}/workspace/mcp-sessions/auth?flow=unknown&kind=headers`);
    assert.doesNotMatch(await res.text(), /<div id="root">/);
  });

  test("the initial JavaScript stays within its gzipped budget", async () => {
    const { gzipBytes } = await initialJs(WEB_DIR);
    assert.ok(gzipBytes > 0);
    assert.ok(gzipBytes <= INITIAL_JS_BUDGET_BYTES, `initial JavaScript is ${gzipBytes} bytes gzipped, over ${INITIAL_JS_BUDGET_BYTES}`);
  });
});

describe("in the browser", { skip: SKIP_IN_REPEATED_RUN }, () => {
  test("a wrong password is refused and the right one signs in", async () => {
    await page.goto(`${app.url}/workspace/`);
    await page.getByRole("heading", { name: "Sign in to the gateway" }).waitFor(WAIT);
    await page.getByLabel("Username").fill(ADMIN.username);
    await page.getByLabel("Password").fill("wrong");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").waitFor(WAIT);
    await page.getByLabel("Password").fill(ADMIN.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor(WAIT);
  });

  test("an MCP client added in the form turns healthy and lists its tools", async () => {
    await openRoute("MCP clients");
    await page.getByRole("button", { name: "Add MCP client" }).click();
    await page.getByLabel("Name", { exact: true }).fill("docs");
    await page.getByLabel("URL").fill(plain.httpUrl);
    await page.getByRole("button", { name: "Create client" }).click();
    const card = page.locator("div.rounded-lg", { has: page.getByRole("heading", { name: /^docs/ }) });
    await card.getByText("healthy", { exact: true }).waitFor(WAIT);
    await card.getByText(/Tools \([1-9]/).waitFor(WAIT);
  });

  test("a tool switched off in the list is no longer executable", async () => {
    const card = page.locator("div.rounded-lg", { has: page.getByRole("heading", { name: /^docs/ }) });
    await card.getByText(/Tools \(/).click();
    // The switch shows the stored list, so it flips once the update is saved and the list refetched.
    await card.getByRole("switch", { name: "add" }).click();
    const headers = await adminHeaders();
    let stored: string[] = [];
    await until("the stored tools_to_execute drops add", async () => {
      const listed = await api(app, "GET", "/api/mcp/clients", undefined, headers);
      stored = listed.body.clients.find((c: { name: string }) => c.name === "docs")?.tools_to_execute ?? [];
      return !stored.includes("add") && !stored.includes("*");
    });
    assert.ok(stored.includes("echo"), JSON.stringify(stored));
    await until("the add switch shows off", async () => !(await card.getByRole("switch", { name: "add" }).isChecked()));
  });

  test("a new virtual key's value is shown once and works on /v1", async () => {
    await openRoute("Virtual keys");
    await page.getByRole("button", { name: "Create virtual key" }).click();
    await page.getByLabel("Name", { exact: true }).fill("ci-bot");
    await page.getByRole("switch", { name: "openai" }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = page.getByTestId("new-key-value");
    await shown.waitFor(WAIT);
    const value = (await shown.textContent())?.trim() ?? "";
    assert.ok(value.length > 8, `the shown value is ${value}`);
    const reply = await sdk(app, value).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
    assert.ok(reply.choices.length > 0);
    await page.getByRole("button", { name: "Done" }).click();
    await page.getByRole("cell", { name: /ci-bot/ }).waitFor(WAIT);
    // The panel that showed the value is removed after the click (the list may render first); then the value is nowhere.
    await shown.waitFor({ state: "detached", ...WAIT });
    assert.equal(await page.getByText(value).count(), 0);
  });

  test("rotating a key shows the new value once; the old one stops working", async () => {
    const old = await sdk(app, ALICE).models.list();
    assert.ok(old.data.length > 0);
    const row = page.getByRole("row", { name: /alice/ });
    await row.getByRole("button", { name: "Rotate" }).click();
    const shown = page.getByTestId("rotated-key-value");
    await shown.waitFor(WAIT);
    const value = (await shown.textContent())?.trim() ?? "";
    assert.match(value, /^sk-gw-/);
    const reply = await sdk(app, value).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
    assert.ok(reply.choices.length > 0);
    const refused = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, { authorization: `Bearer ${ALICE}` });
    assert.equal(refused.status, 401);
    await row.getByRole("button", { name: "Done" }).click();
    await shown.waitFor({ state: "detached", ...WAIT });
    assert.equal(await page.getByText(value).count(), 0);
    aliceKey = value;
  });

  test("a routing rule with invalid CEL is refused with the server's message, then saved once fixed", async () => {
    await openRoute("Routing rules");
    await page.getByRole("button", { name: "Add routing rule" }).click();
    await page.getByLabel("Name", { exact: true }).fill("mini-first");
    await page.getByLabel("CEL expression").fill('model == "gpt-4o" &&');
    await page.getByLabel("Target model").fill("gpt-4o-mini");
    await page.getByRole("button", { name: "Save rule" }).click();
    await page.getByRole("alert").waitFor(WAIT);
    const listed = await api(app, "GET", "/api/governance/routing-rules", undefined, await adminHeaders());
    assert.equal(listed.body.count, 0);
    await page.getByLabel("CEL expression").fill('model == "gpt-4o"');
    await page.getByRole("button", { name: "Save rule" }).click();
    await page.getByRole("cell", { name: /mini-first/ }).waitFor(WAIT);
  });

  test("a guardrail with a pattern that does not compile is refused with the server's message, then saved once fixed", async () => {
    await openRoute("Guardrails");
    await page.getByRole("button", { name: "Add guardrail" }).click();
    await page.getByLabel("Name", { exact: true }).fill("no order ids");
    await page.getByLabel("Check", { exact: true }).selectOption({ label: "regex" });
    await page.getByLabel("Patterns, one per line").fill("(ORD-");
    await page.getByRole("button", { name: "Save guardrail" }).click();
    await page.getByRole("alert").waitFor(WAIT);
    assert.match((await page.getByRole("alert").textContent()) ?? "", /check\.regex\.patterns\[0\]/);
    assert.equal((await api(app, "GET", "/api/guardrails", undefined, await adminHeaders())).body.count, 0);
    await page.getByLabel("Patterns, one per line").fill("ORD-\\d{6}");
    await page.getByLabel("Action", { exact: true }).selectOption({ label: "redact" });
    await page.getByRole("button", { name: "Save guardrail" }).click();
    await page.getByRole("cell", { name: /no order ids/ }).waitFor(WAIT);
    const [saved] = (await api(app, "GET", "/api/guardrails", undefined, await adminHeaders())).body.guardrails;
    assert.deepEqual([saved.check, saved.action, saved.redaction.strategy], [{ type: "regex", regex: { patterns: ["ORD-\\d{6}"], case_insensitive: false } }, "redact", "replace"]);
  });

  test("a guardrail edited in its row keeps what the form did not change, and the open editor passes axe-core", async () => {
    await openRoute("Guardrails");
    await page.getByRole("button", { name: "Edit" }).click();
    await page.getByLabel("Sampling rate").fill("0.5");
    const result = await new AxeBuilder({ page }).analyze();
    const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), []);
    await page.getByRole("button", { name: "Save guardrail" }).click();
    // Exact: by default a name matches as a substring, and "Close editor", shown until the save is done, holds "edit".
    await page.getByRole("button", { name: "Edit", exact: true }).waitFor(WAIT);
    const [saved] = (await api(app, "GET", "/api/guardrails", undefined, await adminHeaders())).body.guardrails;
    assert.equal(saved.sampling_rate, 0.5);
    assert.deepEqual(saved.check.regex.patterns, ["ORD-\\d{6}"]);
  });

  test("a virtual MCP server naming a tool its client does not have is refused with the server's message, then saved", async () => {
    await openRoute("Virtual MCP servers");
    await page.getByRole("button", { name: "Add virtual server" }).click();
    await page.getByLabel("Name", { exact: true }).fill("docs_echo");
    await page.getByLabel("Client of member 1").selectOption({ label: "docs" });
    await page.getByLabel("Tools of member 1").fill("echo, nosuch");
    await page.getByRole("button", { name: "Save virtual server" }).click();
    await page.getByRole("alert").waitFor(WAIT);
    assert.match((await page.getByRole("alert").textContent()) ?? "", /members\[0\]\.tools\[1\]/);
    assert.equal((await api(app, "GET", "/api/mcp/virtual-servers", undefined, await adminHeaders())).body.count, 0);
    await page.getByLabel("Tools of member 1").fill("echo");
    await page.getByRole("button", { name: "Save virtual server" }).click();
    await page.getByRole("cell", { name: /docs_echo/ }).first().waitFor(WAIT);
    const [saved] = (await api(app, "GET", "/api/mcp/virtual-servers", undefined, await adminHeaders())).body.virtual_servers;
    assert.deepEqual(saved.members, [{ client: "docs", tools: ["echo"], resources: true, prompts: true }]);
  });

  test("a per-user credential flow finished on its page shows in MCP sessions", async () => {
    // With admin auth on, a virtual key's flow link needs a temp token: turned on in Settings.
    await openRoute("Settings");
    await page.getByRole("switch", { name: "Add a temp token to credential links" }).check();
    await page.getByRole("button", { name: "Save gateway settings" }).click();
    await page.getByText("Saved.").waitFor(WAIT);
    const headers = await adminHeaders();
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "crm",
      connection_type: "http",
      connection_string: perUser.httpUrl,
      auth_type: "per_user_headers",
      per_user_header_keys: ["x-user-token"],
      user_headers: { "x-user-token": "admin-sample" },
      tools_to_execute: ["*"],
    }, headers);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const call = await api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: '{"text":"hi"}' } }, { "x-gw-vk": aliceKey });
    assert.equal(call.status, 401, JSON.stringify(call.body));
    const flowPage = await browser.context.newPage();
    await flowPage.goto(call.body.mcp_auth_required.submit_url);
    await flowPage.getByLabel("x-user-token").fill(ALICE_TOKEN);
    await flowPage.getByRole("button", { name: "Save" }).click();
    await flowPage.locator("#saved:not([hidden]), #error:not([hidden])").waitFor(WAIT);
    assert.equal(await flowPage.locator("#error").isVisible(), false, (await flowPage.locator("#error-message").textContent()) ?? "");
    await flowPage.close();
    await openRoute("MCP sessions");
    const row = page.getByRole("row", { name: /crm.*alice/ });
    await row.getByText("active").waitFor(WAIT);
  });

  test("Edit values opens the credential's flow, and the values saved there show in MCP sessions", async () => {
    const headers = await adminHeaders();
    const stored = async () => (await api(app, "GET", "/api/mcp/sessions", undefined, headers)).body.sessions.find((s: { mcp_client_name: string }) => s.mcp_client_name === "crm");
    const before = await stored();
    const row = page.getByRole("row", { name: /crm.*alice/ });
    const [flowPage] = await Promise.all([browser.context.waitForEvent("page"), row.getByRole("button", { name: "Edit values" }).click()]);
    await flowPage.waitForLoadState();
    assert.match(flowPage.url(), /\/workspace\/mcp-sessions\/auth\?flow=[^&]+&kind=headers/);
    // The page drops the temp token from its address once read; the dashboard's copy of the link still shows it.
    assert.match((await page.getByTestId("edit-flow-link").getAttribute("href")) ?? "", /#t=/);
    await flowPage.getByLabel("x-user-token").fill(ALICE_NEW_TOKEN);
    await flowPage.getByRole("button", { name: "Save" }).click();
    await flowPage.locator("#saved:not([hidden]), #error:not([hidden])").waitFor(WAIT);
    assert.equal(await flowPage.locator("#error").isVisible(), false, (await flowPage.locator("#error-message").textContent()) ?? "");
    await flowPage.close();
    const after = await stored();
    assert.equal(after.credential_id, before.credential_id);
    assert.ok(Date.parse(after.updated_at) > Date.parse(before.updated_at), `${after.updated_at} after ${before.updated_at}`);
    // The page writes times in the browser's locale and zone.
    const shown = await page.evaluate((iso) => new Date(iso).toLocaleString(), String(after.updated_at));
    await until("the row shows the new update time", async () => (await row.textContent())?.includes(shown) ?? false);
    await row.getByText("active").waitFor(WAIT);
  });

  test("the overview's request count moves after traffic", async () => {
    await openRoute("Overview");
    const stat = page.getByTestId("stat-requests");
    await stat.waitFor(WAIT);
    const before = Number((await stat.textContent())?.replace(/,/g, ""));
    const client = sdk(app, aliceKey);
    for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: `hello ${i}` }] });
    await until("the request count grows by 3", async () => Number((await stat.textContent())?.replace(/,/g, "")) >= before + 3);
  });

  test("the overview switches between 1 hour, 24 hours and 7 days and shows p50 and p95 latency", async () => {
    await openRoute("Overview");
    for (const label of ["24 hours", "7 days", "1 hour"]) {
      const button = page.getByRole("group", { name: "Time range" }).getByRole("button", { name: label });
      await button.click();
      await until(`${label} is pressed`, async () => (await button.getAttribute("aria-pressed")) === "true");
      await page.getByText(`Requests (${label})`).waitFor(WAIT);
      await until(`the ${label} totals count requests`, async () => Number((await page.getByTestId("stat-requests").textContent())?.replace(/,/g, "")) > 0);
      const latency = (await page.getByTestId("stat-latency").textContent()) ?? "";
      const [p50, p95] = latency.replace(/ ms$/, "").split(" / ").map((v) => Number(v.replace(/,/g, "")));
      assert.ok(p50 !== undefined && p95 !== undefined && p50 > 0 && p95 >= p50, latency);
      await page.getByRole("table", { name: `Virtual keys by spend over ${label}` }).getByRole("cell", { name: "alice", exact: true }).waitFor(WAIT);
      await page.waitForLoadState("networkidle");
      await page.screenshot({ path: `${ARTIFACTS}/overview-${label.replace(" ", "")}.png`, fullPage: true });
    }
  });

  test("Teams & customers shows what a team spent in its budget window", async () => {
    const headers = await adminHeaders();
    const team = await api(app, "POST", "/api/governance/teams", { name: "research", budget: { max_limit: 50, reset_duration: "1M" } }, headers);
    assert.equal(team.status, 200, JSON.stringify(team.body));
    const moved = await api(app, "PUT", "/api/governance/virtual-keys/vk-alice", { team_id: team.body.team.id }, headers);
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    await sdk(app, aliceKey).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "spend" }] });
    await openRoute("Teams & customers");
    const row = page.getByRole("row", { name: /research/ });
    await row.getByText(/ of 50 USD/).waitFor(WAIT);
    const used = Number(((await row.getByText(/ of 50 USD/).textContent()) ?? "").split(" of ")[0]);
    assert.ok(used > 0, `the team used ${used}`);
  });

  test("Settings shows the response cache and tracing status", async () => {
    await openRoute("Settings");
    const text = async (id: string) => ((await page.getByTestId(id).textContent()) ?? "").replace(/\s+/g, " ");
    await page.getByTestId("tracing-status").waitFor(WAIT);
    assert.match(await text("cache-status"), /Status: ?on/);
    assert.match(await text("cache-status"), /Semantic lookups: ?unavailable/);
    assert.match(await text("tracing-status"), /Status: ?off/);
    assert.match(await text("tracing-status"), /OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  test("every route passes axe-core without serious violations at 1280 px and 390 px", async () => {
    for (const [width, height] of [[1280, 900], [390, 844]] as const) {
      await page.setViewportSize({ width, height });
      for (const [path, label] of ROUTES) {
        await page.goto(`${app.url}/workspace/${path}`);
        await page.getByRole("heading", { level: 1, name: label }).waitFor(WAIT);
        await page.waitForLoadState("networkidle");
        await page.screenshot({ path: `${ARTIFACTS}/${path || "overview"}-${width}.png`, fullPage: true });
        const result = await new AxeBuilder({ page }).analyze();
        const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
        assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), [], `${label} at ${width} px`);
        const overflow = Number(await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"));
        assert.ok(overflow <= 0, `${label} scrolls sideways at ${width} px`);
      }
    }
  });

  test("the navigation is reachable from the keyboard", async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${app.url}/workspace/`);
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor(WAIT);
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate("document.activeElement?.textContent"), "Skip to content");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "MCP clients" }).waitFor(WAIT);
  });

  test("a session ended elsewhere brings back the sign-in form", async () => {
    await page.goto(`${app.url}/workspace/mcp-clients`);
    await page.getByRole("heading", { level: 1, name: "MCP clients" }).waitFor(WAIT);
    const token = String(await page.evaluate("sessionStorage.getItem('gw-admin-token')"));
    const out = await api(app, "POST", "/api/session/logout", {}, { authorization: `Bearer ${token}` });
    assert.equal(out.status, 200);
    // The next 5 s refresh is refused; the page forgets the session.
    await page.getByRole("heading", { name: "Sign in to the gateway" }).waitFor(WAIT);
  });

  test("no route logged a console error or got a 404 or 5xx", () => {
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(badResponses, []);
  });
});

describe("with admin auth off", () => {
  let open: TestApp;

  before(async () => {
    open = await startApp();
  });

  after(async () => {
    await open?.stop();
  });

  test("the dashboard opens without a sign-in and warns in a banner", async () => {
    const tab = await browser.context.newPage();
    await tab.goto(`${open.url}/workspace/`);
    await tab.getByRole("heading", { level: 1, name: "Overview" }).waitFor(WAIT);
    const banner = await tab.getByRole("status").filter({ hasText: "Admin authentication is off" }).textContent();
    assert.match(banner ?? "", /auth_config\.is_enabled/);
    assert.equal(await tab.getByRole("button", { name: "Sign out" }).count(), 0);
    await tab.close();
  });
});

describe("with SSO configured", () => {
  let idp: IdpFixture;
  let sso: TestApp;

  before(async () => {
    idp = await startIdpFixture({ accounts: { root: { sub: "root", email: "root@example.com" } } });
    sso = await startApp({
      auth: { enabled: true, username: ADMIN.username, password: ADMIN.password, sessionTtlMs: 3_600_000 },
      sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET, adminEmails: ["root@example.com"] },
    });
  });

  after(async () => {
    await sso?.stop();
    await idp?.close();
  });

  test("without SSO the sign-in page has no SSO button", async () => {
    const tab = await browser.context.newPage();
    await tab.goto(`${app.url}/workspace/`);
    await tab.getByRole("heading", { name: "Sign in to the gateway" }).waitFor(WAIT);
    await tab.waitForLoadState("networkidle");
    assert.equal(await tab.getByRole("link", { name: "Sign in with SSO" }).count(), 0);
    await tab.close();
  });

  test("the sign-in page offers SSO, and an SSO admin lands on the dashboard", async () => {
    const tab = await browser.context.newPage();
    await tab.goto(`${sso.url}/workspace/`);
    const button = tab.getByRole("link", { name: "Sign in with SSO" });
    await button.waitFor(WAIT);
    await tab.screenshot({ path: `${ARTIFACTS}/sign-in-sso.png`, fullPage: true });
    const result = await new AxeBuilder({ page: tab }).analyze();
    assert.deepEqual(result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id), []);
    await button.click();
    await signInAtIdp(tab, "root", `${sso.url}/workspace/`);
    await tab.getByRole("heading", { level: 1, name: "Overview" }).waitFor(WAIT);
    assert.equal(await tab.getByText("Admin authentication is off").count(), 0);
    await tab.close();
  });

  test("an SSO admin's Sign out ends the SSO session and returns to the sign-in page", async () => {
    // Signed out everywhere first (the gateway's and the identity provider's cookies), as a new visitor is.
    await browser.context.clearCookies();
    const tab = await browser.context.newPage();
    await tab.goto(`${sso.url}/workspace/`);
    await tab.getByRole("link", { name: "Sign in with SSO" }).click();
    await signInAtIdp(tab, "root", `${sso.url}/workspace/`);
    await tab.getByRole("heading", { level: 1, name: "Overview" }).waitFor(WAIT);
    await tab.getByRole("button", { name: "Sign out" }).click();
    await tab.getByRole("link", { name: "Sign in with SSO" }).waitFor(WAIT);
    const cookies = await browser.context.cookies(sso.url);
    assert.equal(cookies.filter((c) => c.name === "gw_session" && c.value !== "").length, 0);
    await tab.close();
  });
});

describe("an OAuth MCP client", () => {
  const suite = oauthSuite();

  test("is authorized from its Authorize button and connects with Finish connecting", async () => {
    const tab = await browser.context.newPage();
    await tab.goto(`${suite.app.url}/workspace/mcp-clients`);
    await tab.getByRole("button", { name: "Add MCP client" }).click();
    await tab.getByLabel("Name", { exact: true }).fill("browsed");
    await tab.getByLabel("URL").fill(suite.oauth.mcpUrl);
    await tab.getByLabel("Auth type").selectOption({ label: "OAuth (shared)" });
    await tab.getByRole("button", { name: "Create client" }).click();
    const authorize = tab.getByRole("link", { name: "Authorize with the provider" });
    await authorize.waitFor(WAIT);
    await tab.getByText("Authorization: pending").waitFor(WAIT);
    const [consent] = await Promise.all([tab.context().waitForEvent("page"), authorize.click()]);
    // The authorization server asks to sign in first, then for consent: the same Approve button both times.
    for (let step = 0; step < 2; step++) {
      await consent.locator("#approve").click();
      await consent.waitForLoadState();
    }
    await consent.locator("#oauth-authorized").waitFor(WAIT);
    await consent.close();
    await tab.getByRole("button", { name: "Finish connecting" }).click();
    await tab.getByRole("button", { name: "Done" }).click();
    const card = tab.locator("div.rounded-lg", { has: tab.getByRole("heading", { name: /^browsed/ }) });
    await card.getByText("healthy", { exact: true }).waitFor(WAIT);
    await tab.close();
  });
});

/** Polls `check` until it holds, failing with `what` after a minute. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT.timeout;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** An admin session for the API calls the test makes beside the browser. */
async function adminHeaders(): Promise<Record<string, string>> {
  const login = await api(app, "POST", "/api/session/login", ADMIN);
  assert.equal(login.status, 200);
  return { authorization: `Bearer ${login.body.token}` };
}
