/** Drives the IdP fixture's sign-in and consent pages in a browser page until the gateway takes the page back. */
import type { Page } from "playwright-core";

/** Signs `account` in on the page, which is at the IdP (or about to be); resolves once the page is back at `returnUrl`. */
export async function signInAtIdp(page: Page, account: string, returnUrl: string): Promise<void> {
  const gateway = new URL(returnUrl).origin;
  // Sign-in, then consent: each is one form on the provider's side; a provider session skips both.
  for (let step = 0; step < 2 && !page.url().startsWith(gateway); step++) {
    const before = page.url();
    await page.locator("#account").fill(account);
    await Promise.all([page.waitForURL((url) => url.href !== before), page.locator("#continue").click()]);
  }
  await page.waitForURL((url) => url.href.startsWith(returnUrl));
}
