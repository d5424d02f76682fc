/**
 * The browser of the page tests: Debian's Chromium at /usr/bin/chromium driven by playwright-core (no
 * browser is ever downloaded), with the flags this offline machine needs (without them Chromium stalls on
 * refused connections to Google's services).
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
