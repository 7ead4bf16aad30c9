/**
 * The shell blocks of the README and docs/ as a reader copies them: each parses as bash, names only npm
 * scripts that package.json defines and repository files that exist, and calls the gateway only on paths and
 * methods it serves (read from the OpenAPI document the gateway builds from the same protos, plus its browser
 * routes).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { buildGatewayOpenApi } from "../../src/server/openapi/gateway-document.js";
import { DASHBOARD_PREFIX } from "../../src/server/pages/dashboard.js";
import { OAUTH_CALLBACK_PAGE_PATH } from "../../src/server/pages/oauth-callback.js";
import { SSO_LOGOUT_PATH } from "../../src/server/pages/sso-routes.js";
import { OAUTH2_PREFIX } from "../../src/server/oauth2/oauth2-server.js";
import { SSO_CALLBACK_PATH, SSO_LOGIN_PATH } from "../../src/services/sso/sso-login.js";
import { generatedServices } from "../helpers/generated-services.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** One fenced shell block: where it is and its text. */
interface Block {
  where: string;
  text: string;
}

function shellBlocks(): Block[] {
  const files = ["README.md", ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
  return files.flatMap((file) => {
    const lines = readFileSync(join(root, file), "utf8").split("\n");
    const blocks: Block[] = [];
    let start = -1;
    for (const [i, line] of lines.entries()) {
      if (start === -1 && /^```(sh|bash|shell)\s*$/.test(line)) start = i;
      else if (start !== -1 && line.startsWith("```")) {
        blocks.push({ where: `${file}:${start + 1}`, text: lines.slice(start + 1, i).join("\n") });
        start = -1;
      }
    }
    return blocks;
  });
}

const blocks = shellBlocks();

/** The blocks' commands without comment lines, continuation lines joined. */
function commands(block: Block): string[] {
  return block.text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.replace(/(^|\s)#.*$/, "").trim())
    .filter((line) => line !== "");
}

test("the docs have shell blocks to check", () => {
  assert.ok(blocks.length >= 20, `found only ${blocks.length} shell blocks`);
});

test("every shell block parses as bash", () => {
  const broken = blocks.flatMap((block) => {
    const parsed = spawnSync("bash", ["-n"], { input: block.text, encoding: "utf8" });
    return parsed.status === 0 ? [] : [`${block.where}: ${parsed.stderr.trim()}`];
  });
  assert.deepEqual(broken, []);
});

test("every npm script a shell block runs is defined in package.json", () => {
  const scripts = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  const missing = blocks.flatMap((block) =>
    commands(block).flatMap((line) => [...line.matchAll(/\bnpm run ([\w:.-]+)/g)].map((m) => m[1] ?? "").filter((name) => !(name in scripts)).map((name) => `${block.where}: npm run ${name}`)),
  );
  assert.deepEqual(missing, []);
});

test("every repository file a shell block names exists", () => {
  const missing = blocks.flatMap((block) =>
    commands(block).flatMap((line) =>
      [...line.matchAll(/(?:^|[\s=])((?:src|test|bench|deploy|proto|web|\.ci)\/[\w./-]*\w)/g)]
        .map((m) => m[1] ?? "")
        .filter((path) => !existsSync(join(root, path)))
        .map((path) => `${block.where}: ${path}`),
    ),
  );
  assert.deepEqual(missing, []);
});

/** The method of a curl command line: -X, else POST with a body, else GET. */
function curlMethod(line: string): string {
  const explicit = /(?:^|\s)(?:-X|--request)\s*([A-Z]+)/.exec(line)?.[1];
  if (explicit !== undefined) return explicit;
  return /(?:^|\s)(?:-d|--data\S*|-F|--form)\s/.test(line) ? "POST" : "GET";
}

test("every gateway call in a shell block uses a path and method the gateway serves", async () => {
  const services = await generatedServices();
  const doc = buildGatewayOpenApi(services, "docs") as { paths: Record<string, Record<string, unknown>> };
  // Connect and gRPC-Web calls POST to /<package.Service>/<Method>.
  const procedures = new Set(services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
  const templates = Object.entries(doc.paths).map(([template, operations]) => ({
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
    methods: new Set(Object.keys(operations).map((m) => m.toUpperCase())),
  }));
  const browserPaths = [SSO_LOGIN_PATH, SSO_CALLBACK_PATH, SSO_LOGOUT_PATH, OAUTH_CALLBACK_PAGE_PATH, "/openapi.json", "/"];
  const browserPrefixes = [`${DASHBOARD_PREFIX}/`, `${OAUTH2_PREFIX}/`, "/.well-known/"];
  const unserved: string[] = [];
  let calls = 0;
  for (const block of blocks) {
    for (const line of commands(block)) {
      if (!/\bcurl\b/.test(line)) continue;
      // Only the first URL of a pipeline stage is the call; a piped second curl is its own stage.
      for (const stage of line.split("|")) {
        const url = /(?:https?:\/\/)?(?:localhost|127\.0\.0\.1):8080(\/[^\s'"?#]*)?/.exec(stage);
        if (!/\bcurl\b/.test(stage) || url === null) continue;
        calls++;
        const path = url[1] ?? "/";
        const method = curlMethod(stage);
        if (browserPaths.includes(path) || browserPrefixes.some((prefix) => path.startsWith(prefix))) continue;
        if (method === "POST" && procedures.has(path)) continue;
        const served = templates.some((t) => t.pattern.test(path) && (t.methods.has(method) || (method === "HEAD" && t.methods.has("GET"))));
        if (!served) unserved.push(`${block.where}: ${method} ${path}`);
      }
    }
  }
  assert.ok(calls >= 20, `found only ${calls} gateway calls`);
  assert.deepEqual(unserved, []);
});
