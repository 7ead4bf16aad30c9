/**
 * `node dist/store/embedded-template-cli.js <dir>`, run by `npm run build`: makes the embedded
 * database's migrated template in <dir> (dist/pglite-template), which first starts copy.
 */
import { resolve } from "node:path";
import { createLogger } from "../telemetry/logger.js";
import { createEmbeddedTemplate } from "./embedded-template.js";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: embedded-template-cli <directory>\n");
  process.exit(2);
}
await createEmbeddedTemplate(resolve(dir), createLogger({ level: "warn" }));
