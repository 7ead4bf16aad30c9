/**
 * The web dashboard: the single-page app built into dist/web, served under /workspace/. Hashed assets get
 * a year's immutable cache lifetime and their precompressed .br or .gz twin when the browser takes it;
 * every other path under /workspace/ is the app's index.html (its router draws the page), never cached.
 * `/` redirects here. Files are read once, on the first request, and kept in memory.
 */
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { sendError, type Req, type Res } from "../node-http.js";

/** Where the dashboard lives. */
export const DASHBOARD_PREFIX = "/workspace";

const ASSETS_PREFIX = `${DASHBOARD_PREFIX}/assets/`;

// Beside the bundle (dist/main.js -> dist/web) or, run from source, the repo's build output.
const CANDIDATE_DIRS = [fileURLToPath(new URL("./web", import.meta.url)), fileURLToPath(new URL("../../../dist/web", import.meta.url))];

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".map": "application/json",
};

// Inline styles are allowed because the chart library positions its elements with style attributes.
const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** One file of the build with its precompressed twins. */
interface Asset {
  type: string;
  raw: Buffer;
  gz?: Buffer;
  br?: Buffer;
}

/** Reads every file of the build, keyed by its path under /workspace/. */
async function loadAssets(dir: string): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || entry.name.endsWith(".gz") || entry.name.endsWith(".br")) continue;
    const path = join(entry.parentPath, entry.name);
    const key = relative(dir, path).split(sep).join("/");
    const asset: Asset = { type: TYPES[extname(entry.name)] ?? "application/octet-stream", raw: await readFile(path) };
    if (existsSync(`${path}.gz`)) asset.gz = await readFile(`${path}.gz`);
    if (existsSync(`${path}.br`)) asset.br = await readFile(`${path}.br`);
    assets.set(key, asset);
  }
  return assets;
}

/** Picks the smallest encoding the request accepts. */
function encodingFor(req: Req, asset: Asset): { body: Buffer; encoding?: string } {
  const accept = String(req.headers["accept-encoding"] ?? "");
  if (asset.br && /\bbr\b/.test(accept)) return { body: asset.br, encoding: "br" };
  if (asset.gz && /\bgzip\b/.test(accept)) return { body: asset.gz, encoding: "gzip" };
  return { body: asset.raw };
}

/** Writes one asset with its caching and encoding headers; HEAD gets the headers only. */
function sendAsset(req: Req, res: Res, asset: Asset, cacheControl: string): void {
  const { body, encoding } = encodingFor(req, asset);
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "content-type": asset.type,
    "content-length": body.length,
    "cache-control": cacheControl,
    vary: "accept-encoding",
    ...(encoding ? { "content-encoding": encoding } : {}),
  });
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

/** Serves the dashboard from `dir` (default: the build beside the gateway); the handler takes paths under /workspace and `/`. */
export function createDashboard(dir?: string): (req: Req, res: Res, path: string) => void {
  const webDir = dir ?? CANDIDATE_DIRS.find((d) => existsSync(join(d, "index.html")));
  let loaded: Promise<Map<string, Asset>> | null = null;
  return (req, res, path) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      sendError(res, 405, "method_not_allowed", `method ${req.method ?? ""} is not allowed on ${path}; use GET`);
      return;
    }
    if (path === "/" || path === DASHBOARD_PREFIX) {
      res.writeHead(302, { location: `${DASHBOARD_PREFIX}/`, "content-length": 0 });
      res.end();
      return;
    }
    if (webDir === undefined) {
      sendError(res, 404, "dashboard_not_built", "the dashboard is not built: run `npm run build` and restart the gateway");
      return;
    }
    loaded ??= loadAssets(webDir);
    loaded.then(
      (assets) => {
        if (path.startsWith(ASSETS_PREFIX)) {
          const asset = assets.get(path.slice(DASHBOARD_PREFIX.length + 1));
          if (asset === undefined) sendError(res, 404, "not_found", `no dashboard asset ${path}`);
          else sendAsset(req, res, asset, "public, max-age=31536000, immutable");
          return;
        }
        const index = assets.get("index.html");
        if (index === undefined) sendError(res, 404, "dashboard_not_built", "the dashboard is not built: run `npm run build` and restart the gateway");
        else sendAsset(req, res, index, "no-cache");
      },
      () => {
        loaded = null;
        sendError(res, 503, "dashboard_unreadable", `the dashboard files in ${webDir} could not be read; check the directory and its permissions`);
      },
    );
  };
}

/** Whether `path` is the dashboard's (or the `/` redirect's). */
export function isDashboardPath(path: string): boolean {
  return path === "/" || path === DASHBOARD_PREFIX || path.startsWith(`${DASHBOARD_PREFIX}/`);
}
