/**
 * Every service the protos declare, read from the generated code under gen/gw/, so that a test covering
 * every RPC covers a new one without being touched.
 */
import { readdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { DescService } from "@bufbuild/protobuf";

const GEN_GW = fileURLToPath(new URL("../../gen/gw/", import.meta.url));

/** The services of every `_pb` file under gen/gw/, in file order. */
export async function generatedServices(): Promise<DescService[]> {
  const files = (await readdir(GEN_GW, { recursive: true })).filter((name) => name.endsWith("_pb.ts")).sort();
  const services: DescService[] = [];
  for (const name of files) {
    // By its `.js` name, as the static imports name it, so that the compiled test tree loads its own copy
    // (tsx resolves the same name to the source).
    const exports = (await import(new URL(name.replace(/\.ts$/, ".js"), `file://${GEN_GW}`).href)) as Record<string, unknown>;
    for (const value of Object.values(exports)) {
      if (typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "service") services.push(value as DescService);
    }
  }
  return services;
}
