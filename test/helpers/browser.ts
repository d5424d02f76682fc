/**
 * The browser of the page tests: Debian's Chromium at /usr/bin/chromium driven by playwright-core (no
 * browser is ever downloaded), with the flags this offline machine needs (without them Chromium stalls on
 * refused connections to Google's services).
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Where Debian puts Chromium (`apt-get install chromium`; .ci/run installs it when missing). */
export const CHROMIUM = '/usr/bin/chromium';

/** The launch flags: headless, no sandbox (root in CI), no GPU, no background network, no first-run UI. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

/**
 * Whether Chromium is installed. When it is not, prints `skipped: ... not found` naming `what` (the tests
 * that need it), so a skipped browser suite says why; use with `describe.skipIf(!hasChromium(...))`.
 */
export function hasChromium(what: string): boolean {
  const found = existsSync(CHROMIUM);
  if (!found) console.warn(`skipped: ${CHROMIUM} not found (Debian: apt-get install chromium); ${what} need it`);
  return found;
}

/** Starts Chromium with CHROMIUM_ARGS. Rejects when it cannot start. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A page in its own browser profile, and what went wrong in it: uncaught errors and CSP violations. */
export interface Tab {
  context: BrowserContext;
  page: Page;
  problems: string[];
}

/** Records `page`'s uncaught errors and Content-Security-Policy (or Trusted Types) violations in `problems`. */
export function watchProblems(page: Page, problems: string[]): void {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy|Trusted Type/i.test(msg.text())) problems.push(`csp: ${msg.text()}`);
  });
}

/**
 * A fresh browser profile (its own storage) on `baseURL` with one watched page of `width` x `height` CSS
 * pixels (default 1280 x 800). `clipboard` grants clipboard read and write; `beforePage` runs on the
 * context before the page opens (e.g. `addInitScript`).
 */
export async function openTab(browser: Browser, baseURL: string, opts: {
  width?: number; height?: number; clipboard?: boolean; beforePage?: ((context: BrowserContext) => Promise<unknown>) | undefined;
} = {}): Promise<Tab> {
  const context = await browser.newContext({
    baseURL, viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
    ...(opts.clipboard ? { permissions: ['clipboard-read', 'clipboard-write'] } : {}),
  });
  await opts.beforePage?.(context);
  const page = await context.newPage();
  const problems: string[] = [];
  watchProblems(page, problems);
  return { context, page, problems };
}

/** Asserts that `tab` saw no uncaught error or CSP violation, then closes its profile. */
export async function closeTab(tab: Tab): Promise<void> {
  expect(tab.problems).toEqual([]);
  await tab.context.close();
}

/**
 * Opens `/dashboard` on `page`, waits for the sign-in page and submits `person`'s e-mail and password.
 * Returns once the form is sent; the caller waits for the page it expects next (the inbox, the
 * organization picker).
 */
export async function submitDashboardSignIn(page: Page, person: { email: string; password: string }): Promise<void> {
  await page.goto('/dashboard');
  await page.getByRole('heading', { name: 'Sign in', exact: true, level: 1 }).waitFor();
  await page.getByLabel('E-mail').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
