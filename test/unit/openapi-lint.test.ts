import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

test("the served OpenAPI document passes Redocly's recommended rules without errors or warnings", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", "src/openapi-lint.ts"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  assert.equal(code, 0, output);
  assert.doesNotMatch(output, /You have \d+ warnings?/, output);
});
