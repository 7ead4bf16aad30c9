/**
 * `npm run lint:openapi`: builds the document GET /openapi.json serves (same services, same builder, no
 * server started), writes it to a temporary file and lints it with Redocly's recommended rules. Exits
 * with Redocly's status.
 */
import type { DescService } from "@bufbuild/protobuf";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { VERSION } from "./app.js";
import { buildGatewayOpenApi } from "./server/openapi/gateway-document.js";
import { implementServices, type ServiceDeps } from "./services/index.js";

const REDOCLY = fileURLToPath(new URL("../node_modules/@redocly/cli/bin/cli.js", import.meta.url));

/** A dependency the services keep for their calls; building them for the document makes none, and any use fails loudly. */
function unused<T extends object>(name: string): T {
  // The empty target stands in for T: every property read throws, so nothing is ever read from it as a T.
  return new Proxy({} as T, {
    get: (_target, property) => {
      throw new Error(`building the OpenAPI document used ${name}.${String(property)}`);
    },
  });
}

/** The services the gateway registers, read back from a router exactly as the app does. */
function servedServices(): readonly DescService[] {
  const deps: ServiceDeps = {
    store: unused("store"),
    logger: unused("logger"),
    settings: unused("settings"),
    auth: unused("auth"),
    runtime: unused("runtime"),
    inference: unused("inference"),
    oauth2: unused("oauth2"),
    pricing: unused("pricing"),
    modelLists: unused("modelLists"),
    cluster: unused("cluster"),
    guardrails: unused("guardrails"),
    virtualServers: unused("virtualServers"),
  };
  return implementServices(deps).services;
}

async function main(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "gw-openapi-"));
  try {
    const file = join(dir, "openapi.json");
    await writeFile(file, JSON.stringify(buildGatewayOpenApi(servedServices(), VERSION), null, 2));
    return await new Promise<number>((resolve, reject) => {
      const child = spawn(process.execPath, [REDOCLY, "lint", "--extends=recommended", file], {
        stdio: "inherit",
        // A lint run reports nowhere and checks for no newer version: it stays on this machine.
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_NOTIFICATIONS: "true", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      });
      child.on("error", reject);
      child.on("exit", (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
