/**
 * The consent page of the /mcp authorization server: names the MCP client asking for access and takes
 * the virtual key the grant is bound to. Plain HTML with a form, no script, no external asset.
 */
import { escapeHtml as esc } from "../html-escape.js";

/** What the page shows. */
export interface ConsentPageContent {
  clientName?: string;
  /** Where the form posts; absent when there is nothing left to submit. */
  action?: string;
  /** A message about the last submission or the request. */
  error?: string;
}

/** The page's HTML. */
export function renderConsentPage(page: ConsentPageContent): string {
  const error = page.error ? `<p class="error" role="alert">${esc(page.error)}</p>` : "";
  const form = page.action
    ? `<p><strong>${esc(page.clientName ?? "An MCP client")}</strong> asks to use this gateway's MCP tools. It will act as the virtual key you enter: it sees and calls the tools that key may use.</p>
<form method="post" action="${esc(page.action)}">
<label for="virtual_key">Virtual key</label>
<input id="virtual_key" name="virtual_key" type="password" autocomplete="off" required placeholder="sk-gw-...">
<button type="submit" name="action" value="allow">Allow</button>
<button type="submit" name="action" value="deny" formnovalidate>Deny</button>
</form>`
    : "";
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorize MCP access</title>
<style>:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; } body { max-width: 36rem; margin: 3rem auto; padding: 0 1rem; } input { display: block; width: 100%; margin: .5rem 0 1rem; padding: .4rem; } .error { color: #c62828; }</style>
</head><body><h1>Authorize MCP access</h1>${error}${form}</body></html>`;
}
