/**
 * The dashboard's Webhooks page in a real browser (Debian's Chromium, driven by playwright-core) against a
 * real Parley and a real node:http receiver: an endpoint created from the page (the secret shown once
 * verifies the receiver's signatures), a test event, a failing receiver's attempts in the history (status
 * 500 and the body, shown as text), Retry (409 while an attempt runs; after the receiver recovers, a
 * succeeded delivery), disable and enable, a secret rotation, deletion, and no Webhooks tab for an
 * operator. The page at 1280x800 goes to test-results/webhooks-page.png (docs/images/webhooks.png is
 * taken from it).
 *
 * The tests skip, saying so, only when /usr/bin/chromium is missing.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeTab, hasChromium, launchChromium, openTab, type Tab, submitDashboardSignIn } from '../helpers/browser.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startReceiver, type Receiver, type Received, type Reply } from '../helpers/webhook-receiver.js';

// A browser global used inside page.evaluate() (it runs in Chromium; the server's tsconfig has no DOM lib).
declare const window: any;
declare const document: any;

const chromiumFound = hasChromium("the Webhooks page's browser tests");

const root = resolve(import.meta.dirname, '../..');
const SHOTS = join(root, 'test-results');

let srv: TestServer;
let receiver: Receiver;
let browser: Browser;
/** What the receiver answers next; the tests switch it. */
let reply: Reply = { status: 200, body: 'ok' };

beforeAll(async () => {
  if (!chromiumFound) return;
  expect(existsSync(join(root, 'dist/web/dashboard/index.html')), 'run `npm run build` first (it builds the dashboard)').toBe(true);
  mkdirSync(SHOTS, { recursive: true });
  receiver = await startReceiver(() => reply);
  // Private destinations allowed (the receiver is on 127.0.0.1); three quick attempts per delivery; a
  // hanging receiver times out after 5 s.
  srv = await startTestServer({ PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_WEBHOOK_RETRY_SCHEDULE_MS: '0,200,200', PARLEY_WEBHOOK_TIMEOUT_MS: '5000' });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await receiver?.close();
});

/** A fresh browser profile with one 1280x800 page, watched for uncaught errors and CSP violations. */
const open = (): Promise<Tab> => openTab(browser, srv.url);
const close = closeTab;

const heading = (page: Page, name: string) => page.getByRole('heading', { name, exact: true, level: 1 }).waitFor();
const nav = (page: Page) => page.getByRole('navigation', { name: 'Sections' });

/** Signs in through the sign-in page and waits for the inbox. */
async function signIn(page: Page, person: { email: string; password: string }): Promise<void> {
  await submitDashboardSignIn(page, person);
  await heading(page, 'Inbox');
}

/** The hex HMAC-SHA256 of `raw` keyed with the secret string (API.md: X-Service-Signature). */
const hmacHex = (secret: string, raw: string) => createHmac('sha256', secret).update(raw).digest('hex');

const sentIds: string[] = [];

/**
 * The delivery id in the page's confirmation after "Send test event": the first one not seen before (the
 * previous confirmation may still be on the page for a moment after the click).
 */
async function sentDeliveryId(page: Page): Promise<string> {
  const status = page.getByRole('status').filter({ hasText: /Test event sent \(delivery dlv_/ });
  for (;;) {
    await status.waitFor();
    const m = /dlv_[0-9A-Za-z]+/.exec((await status.textContent()) ?? '');
    expect(m).not.toBeNull();
    if (!sentIds.includes(m![0])) {
      sentIds.push(m![0]);
      return m![0];
    }
    await page.waitForTimeout(50);
  }
}

/** The requests of one delivery that reached the receiver. */
const requestsOf = (deliveryId: string) => (got: Received[]) => got.filter((r) => r.headers['x-service-delivery-id'] === deliveryId);

/** Waits for a row of the delivery history to show `text` (the page follows pending deliveries by itself). */
const rowOf = (page: Page, deliveryId: string): Locator => page.locator(`tr[data-delivery="${deliveryId}"]`);

describe.skipIf(!chromiumFound)('the Webhooks page in Chromium', () => {
  it('creates an endpoint, tests it, shows failed attempts, retries, disables, rotates and deletes', { timeout: 120_000 }, async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'admin' });
    await signIn(page, person);
    expect(await nav(page).getByRole('link').allTextContents()).toEqual(['Inbox', 'API keys', 'Agents', 'Knowledge', 'Usage', 'Members', 'Webhooks']);
    await nav(page).getByRole('link', { name: 'Webhooks', exact: true }).click();
    await heading(page, 'Webhooks');
    expect(new URL(page.url()).pathname).toBe('/dashboard/webhooks');
    await page.getByText('No webhook endpoints yet.').waitFor();

    // Create: the events picker lists the API's events with their descriptions.
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const create = page.getByRole('dialog', { name: 'Add a webhook endpoint' });
    await create.waitFor();
    const events = (await (await srv.api('/v1/webhooks/events')).json() as { data: Array<{ name: string; description: string }> }).data;
    expect(events.length).toBe(10); // SPEC.md's nine and conversation.deleted
    await create.locator('input[name="events"]').first().waitFor();
    const labels = await create.locator('label.check').filter({ has: page.locator('input[name="events"]') }).allTextContents();
    expect(labels).toEqual(events.map((e) => `${e.name}${e.description}`));
    const url = `${receiver.url}/hooks/parley`;
    await create.getByLabel('URL').fill(url);
    await create.getByLabel('Description (optional)').fill('Order system');
    // No event chosen: refused on the page, nothing created.
    await create.getByRole('button', { name: 'Add endpoint' }).click();
    await create.getByRole('alert').filter({ hasText: 'Choose at least one event' }).waitFor();
    expect((await (await srv.api('/v1/webhooks')).json() as { data: unknown[] }).data).toEqual([]);
    await create.getByRole('checkbox', { name: /^message\.created/ }).check();
    await create.getByRole('checkbox', { name: /^handoff\.requested/ }).check();
    await page.screenshot({ path: join(SHOTS, 'webhooks-create.png') });
    await create.getByRole('button', { name: 'Add endpoint' }).click();

    const shown = page.getByRole('dialog', { name: 'Your endpoint’s signing secret' });
    await shown.waitFor();
    expect(await shown.textContent()).toContain('you will not see it again');
    const secret = await shown.getByLabel(`Signing secret of ${url}`).inputValue();
    expect(secret).toMatch(/^whsec_/);
    await shown.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    await page.getByRole('status').filter({ hasText: `Endpoint ${url} added.` }).waitFor();
    const endpointId = new URL(page.url()).searchParams.get('endpoint');
    expect(endpointId).toMatch(/^whe_/);
    const endpoint = () => srv.api(`/v1/webhooks/${endpointId}`).then(async (r) => ({ status: r.status, body: await r.json() as Record<string, unknown> }));
    const created = await endpoint();
    expect(created.status).toBe(200);
    expect(created.body.url).toBe(url);
    expect(created.body.description).toBe('Order system');
    expect([...created.body.events as string[]].sort()).toEqual(['handoff.requested', 'message.created']);
    expect(await page.content()).not.toContain(secret);
    const row = page.locator(`tr[data-endpoint="${endpointId}"]`);
    expect(await row.textContent()).toContain('Enabled');
    await page.getByRole('heading', { level: 2, name: url }).waitFor();
    await page.getByText('No deliveries yet.').waitFor();

    // Send test: it arrives signed with the secret the page showed, and the history shows it succeeded.
    await page.getByRole('button', { name: 'Send test event' }).click();
    const testId = await sentDeliveryId(page);
    const [first] = requestsOf(testId)(await receiver.waitFor((got) => requestsOf(testId)(got).length === 1));
    expect(first!.json.type).toBe('webhook.test');
    expect(first!.headers['x-service-signature']).toBe(hmacHex(secret, first!.raw));
    await rowOf(page, testId).filter({ hasText: 'Succeeded' }).waitFor();
    expect(await rowOf(page, testId).textContent()).toContain('HTTP 200');
    // The focus stayed on the button (the history's reloads did not throw it to the page title).
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Send test event');

    // A failing receiver: three attempts, each 500 with its body, shown as text (not as HTML).
    reply = { status: 500, body: '<b>down</b> for maintenance' };
    await page.getByRole('button', { name: 'Send test event' }).click();
    const failingId = await sentDeliveryId(page);
    await receiver.waitFor((got) => requestsOf(failingId)(got).length === 3);
    const failing = rowOf(page, failingId);
    await failing.filter({ hasText: 'Failed' }).waitFor();
    expect(await failing.locator('td[data-label="Attempts"]').textContent()).toBe('3');
    // The endpoint is failing now (the page reads it again when its deliveries change).
    await row.filter({ hasText: 'Failing' }).waitFor();
    await failing.getByRole('button', { name: /^Attempts of webhook\.test delivery/ }).click();
    const attempts = page.locator(`#attempts-${failingId}`);
    await attempts.locator('li.attempt').nth(2).waitFor();
    expect(await attempts.locator('li.attempt').count()).toBe(3);
    expect(await attempts.locator('li.attempt .badge').allTextContents()).toEqual(['HTTP 500', 'HTTP 500', 'HTTP 500']);
    expect(await attempts.locator('pre.attempt-body').allTextContents()).toEqual(Array(3).fill('<b>down</b> for maintenance'));
    expect(await attempts.locator('pre.attempt-body b').count()).toBe(0);

    // Retry after the receiver recovers: a fourth attempt (listed first, newest first), same event id, and
    // the delivery succeeded.
    reply = { status: 200, body: 'thanks' };
    await attempts.getByRole('button', { name: 'Retry' }).click();
    await failing.filter({ hasText: 'Succeeded' }).waitFor();
    await attempts.locator('li.attempt').nth(3).waitFor();
    expect(await attempts.locator('li.attempt .badge').allTextContents()).toEqual(['HTTP 200', 'HTTP 500', 'HTTP 500', 'HTTP 500']);
    expect(await attempts.locator('pre.attempt-body').first().textContent()).toBe('thanks');
    const sent = requestsOf(failingId)(receiver.got);
    expect(sent.length).toBe(4);
    expect(new Set(sent.map((r) => r.json.id)).size).toBe(1);
    const delivery = await (await srv.api(`/v1/webhooks/${endpointId}/deliveries/${failingId}`)).json() as { status: string; attempt_count: number };
    expect(delivery).toMatchObject({ status: 'succeeded', attempt_count: 4 });
    // A success ends the failing streak, on the page as in the API.
    await row.filter({ hasText: 'Enabled' }).waitFor();
    expect((await endpoint()).body.failing_since).toBeNull();
    // The picture in docs/images/webhooks.png: the endpoints, the open endpoint and its history.
    await page.evaluate(() => window.scrollTo(0, document.querySelector('.table-wrap').getBoundingClientRect().top + window.scrollY - 12));
    await page.screenshot({ path: join(SHOTS, 'webhooks-page.png') });
    // On a phone: nothing wider than the screen, with the attempts open.
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'webhooks-narrow.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });

    // Retry while an attempt runs: 409, said in words.
    reply = 'hang';
    await page.getByRole('button', { name: 'Send test event' }).click();
    const hangingId = await sentDeliveryId(page);
    await receiver.waitFor((got) => requestsOf(hangingId)(got).length === 1);
    reply = { status: 200, body: 'ok' };
    await rowOf(page, hangingId).getByRole('button', { name: /^Attempts of/ }).click();
    const hanging = page.locator(`#attempts-${hangingId}`);
    await hanging.getByRole('button', { name: 'Retry' }).click();
    await hanging.getByRole('alert').filter({ hasText: 'An attempt of this delivery is running right now' }).waitFor();
    // The hung attempt times out, the next one succeeds; its attempt without a response says so.
    await rowOf(page, hangingId).filter({ hasText: 'Succeeded' }).waitFor({ timeout: 20_000 });
    await hanging.locator('li.attempt').nth(1).waitFor();
    expect(await hanging.locator('li.attempt .badge').allTextContents()).toEqual(['HTTP 200', 'No response']);

    // Disable and enable, as the API sees it.
    await page.getByRole('button', { name: 'Disable', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'disabled' }).waitFor();
    expect((await endpoint()).body).toMatchObject({ status: 'disabled', disabled_reason: 'manual' });
    await row.filter({ hasText: 'Disabled' }).waitFor();
    expect(await page.getByRole('button', { name: 'Send test event' }).getAttribute('aria-disabled')).toBe('true');
    await page.getByRole('button', { name: 'Enable', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'enabled' }).waitFor();
    expect((await endpoint()).body).toMatchObject({ status: 'enabled', disabled_reason: null });
    await row.filter({ hasText: 'Enabled' }).waitFor();

    // Rotate without overlap: the new secret (shown once) signs, the old one no longer does.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotate = page.getByRole('dialog', { name: 'Rotate the signing secret' });
    await rotate.waitFor();
    await rotate.getByLabel('Keep signing with the old secret too?').selectOption({ label: 'No: it stops at once' });
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = page.getByRole('dialog', { name: 'The new signing secret' });
    await rotated.waitFor();
    const newSecret = await rotated.getByLabel(`Signing secret of ${url}`).inputValue();
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(secret);
    await rotated.getByRole('button', { name: 'Done' }).click();
    await rotated.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Send test event' }).click();
    const afterRotation = await sentDeliveryId(page);
    const [signed] = requestsOf(afterRotation)(await receiver.waitFor((got) => requestsOf(afterRotation)(got).length === 1));
    expect(signed!.headers['x-service-signature']).toBe(hmacHex(newSecret, signed!.raw));
    expect(signed!.headers['x-service-signature']).not.toBe(hmacHex(secret, signed!.raw));
    // No overlap was chosen: one Standard Webhooks signature, not two.
    expect(String(signed!.headers['webhook-signature']).split(' ')).toHaveLength(1);

    // Delete, after confirming.
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete this endpoint?' });
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByRole('status').filter({ hasText: `Endpoint ${url} deleted.` }).waitFor();
    expect(new URL(page.url()).search).toBe('');
    expect((await endpoint()).status).toBe(404);
    await page.getByText('No webhook endpoints yet.').waitFor();
    expect(await page.locator('tr[data-endpoint]').count()).toBe(0);
    await close(tab);
  });

  it('shows an API error the way other pages do', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'owner' });
    await signIn(page, person);
    await page.goto('/dashboard/webhooks');
    await heading(page, 'Webhooks');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const create = page.getByRole('dialog', { name: 'Add a webhook endpoint' });
    await create.getByLabel('URL').fill('ftp://files.example.com/drop');
    await create.getByRole('checkbox', { name: /^All events/ }).check();
    expect(await create.getByRole('checkbox', { name: /^message\.created/ }).isDisabled()).toBe(true);
    await create.getByRole('button', { name: 'Add endpoint' }).click();
    const res = await srv.api('/v1/webhooks', { body: { url: 'ftp://files.example.com/drop', events: ['*'] } });
    expect(res.status).toBe(400);
    const message = (await res.json() as { error: { message: string } }).error.message;
    await create.getByRole('alert').filter({ hasText: message }).waitFor();
    expect(await create.getByRole('alert').textContent()).toBe(message);

    // An endpoint that does not exist, asked for by its address.
    await page.goto('/dashboard/webhooks?endpoint=whe_doesnotexist');
    await page.getByRole('alert').filter({ hasText: 'This endpoint does not exist' }).waitFor();
    await close(tab);
  });

  it('shows no Webhooks tab to an operator, and opens the inbox for the page\'s address', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'operator' });
    await signIn(page, person);
    expect(await nav(page).getByRole('link').allTextContents()).toEqual(['Inbox', 'Agents', 'Knowledge', 'Members']);
    await page.goto('/dashboard/webhooks');
    await heading(page, 'Inbox');
    expect(new URL(page.url()).pathname).toBe('/dashboard/inbox');
    expect(await page.getByRole('heading', { name: 'Webhooks' }).count()).toBe(0);
    await close(tab);
  });
});
