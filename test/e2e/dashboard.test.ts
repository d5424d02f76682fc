/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core; no browser is ever
 * downloaded) against a real Parley: sign-in, API keys (the secret shown once, copied from the page and
 * used against the API, then revoked), members, the organization picker, the session across reloads,
 * tabs and expiry, sign-out, keyboard use and a 360 px wide screen. Screenshots go to test-results/.
 *
 * The tests skip, saying so, only when /usr/bin/chromium is missing (.ci/run installs it).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeTab, hasChromium, launchChromium, openTab, type Tab, submitDashboardSignIn, watchProblems } from '../helpers/browser.js';
import { newId } from '../../src/ids/ids.js';
import type { AgentRecord } from '../../src/store/records.js';
import { credentialsOf, exitOf, startMain } from '../helpers/main-process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Browser globals used inside page.evaluate() callbacks (they run in Chromium, not in Node; the server's
// tsconfig has no DOM lib, so they are declared loosely here).
declare const document: any;
declare const localStorage: any;
declare const sessionStorage: any;
declare const navigator: any;
declare function getComputedStyle(element: unknown): any;
type HTMLElement = any;
declare const Navigator: any;

const chromiumFound = hasChromium("the dashboard's browser tests");

const root = resolve(import.meta.dirname, '../..');
const SHOTS = join(root, 'test-results');
const REFRESH_TOKEN_KEY = 'parley.refresh_token';

let srv: TestServer;
let browser: Browser;

beforeAll(async () => {
  if (!chromiumFound) return;
  expect(existsSync(join(root, 'dist/web/dashboard/index.html')), 'run `npm run build` first (it builds the dashboard)').toBe(true);
  mkdirSync(SHOTS, { recursive: true });
  srv = await startTestServer();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

/** A fresh browser profile (its own localStorage) with one watched page, allowed to use the clipboard. */
function open(opts: { width?: number; height?: number; withoutWebLocks?: boolean } = {}): Promise<Tab> {
  return openTab(browser, srv.url, {
    width: opts.width ?? 1200, height: opts.height, clipboard: true,
    // As in a browser on a plain-HTTP origin other than localhost, where the Web Locks API does not exist.
    beforePage: opts.withoutWebLocks
      ? (context) => context.addInitScript(() => { Object.defineProperty(Navigator.prototype, 'locks', { get: () => undefined, configurable: true }); })
      : undefined,
  });
}

const close = closeTab;

const heading = (page: Page, name: string) => page.getByRole('heading', { name, exact: true, level: 1 }).waitFor();

/**
 * Signs in through the sign-in page, waits for the first page of the dashboard (the inbox, or the
 * organization picker), and then opens the section `landing` from the navigation.
 */
async function signIn(page: Page, person: { email: string; password: string }, landing = 'API keys'): Promise<void> {
  await submitDashboardSignIn(page, person);
  if (landing === 'Choose an organization') {
    await heading(page, landing);
    return;
  }
  await heading(page, 'Inbox');
  if (landing === 'Inbox') return;
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: landing, exact: true }).click();
  await heading(page, landing);
}

const storedRefreshToken = (page: Page) => page.evaluate((key) => localStorage.getItem(key), REFRESH_TOKEN_KEY);
/** The outline the focused element draws (the dashboard's focus ring), e.g. "2px solid". */
const focusRing = (page: Page) => page.evaluate(() => {
  const style = getComputedStyle(document.activeElement!);
  return `${style.outlineWidth} ${style.outlineStyle}`;
});
const activeElement = (page: Page) => page.evaluate(() => {
  const el = document.activeElement as HTMLElement | null;
  return { id: el?.id ?? '', text: el?.textContent?.trim() ?? '', tag: el?.tagName.toLowerCase() ?? '' };
});

/** The API's error message for a wrong password (the page must show exactly this). */
async function wrongPasswordMessage(email: string): Promise<string> {
  const res = await fetch(`${srv.url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'not the password' }) });
  expect(res.status).toBe(401);
  return (await res.json() as { error: { message: string } }).error.message;
}

describe.skipIf(!chromiumFound)('the dashboard in Chromium', () => {
  it('creates a key whose secret is shown once and copied from the page; the key works until it is revoked', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'owner' });
    await page.goto('/dashboard');
    await heading(page, 'Sign in');
    await page.screenshot({ path: join(SHOTS, 'dashboard-sign-in.png') });
    await signIn(page, person);
    expect(new URL(page.url()).pathname).toBe('/dashboard/keys');

    await page.getByRole('button', { name: 'Create key' }).click();
    const create = page.getByRole('dialog', { name: 'Create an API key' });
    await create.waitFor();
    expect((await activeElement(page)).id).toBe('key-name');
    await page.getByLabel('Name', { exact: true }).fill('build server');
    await create.getByRole('button', { name: 'Create key' }).click();

    const shown = page.getByRole('dialog', { name: 'Your new API key' });
    await shown.waitFor();
    expect(await shown.textContent()).toContain('you will not see it again');
    await page.screenshot({ path: join(SHOTS, 'dashboard-keys-secret.png') });
    const onPage = await page.getByLabel('Secret key of “build server”').inputValue();
    expect(onPage).toMatch(/^sk_[A-Za-z0-9]{36}$/);
    await shown.getByRole('button', { name: 'Copy' }).click();
    await shown.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).waitFor();
    const secret = await page.evaluate(() => navigator.clipboard.readText());
    expect(secret).toBe(onPage);

    const withKey = () => fetch(`${srv.url}/v1/agents`, { headers: { authorization: `Bearer ${secret}` } });
    expect((await withKey()).status).toBe(200);

    await shown.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    expect((await activeElement(page)).text).toBe('Create key');
    const row = page.getByRole('row').filter({ hasText: 'build server' });
    expect(await row.getByRole('cell').nth(0).textContent()).toBe(`sk_…${secret.slice(-4)}`);
    expect(await row.textContent()).toContain('Active');
    // The secret is nowhere on the page any more.
    expect(await page.content()).not.toContain(secret);

    await row.getByRole('button', { name: 'Revoke build server' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke “build server”?' });
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('status').filter({ hasText: 'Key “build server” revoked.' }).waitFor();
    await row.filter({ hasText: 'Revoked' }).waitFor();
    expect(await row.getByRole('button').count()).toBe(0);
    // The Revoke button that opened the dialog is gone; the focus went to the page title, not the void.
    await page.waitForFunction(() => document.activeElement?.id === 'page-title');

    const refused = await withKey();
    expect(refused.status).toBe(401);
    expect((await refused.json() as { error: { code: string } }).error.code).toBe('revoked_api_key');
    await close(tab);
  });

  it('rotates a key with a grace period: the old secret keeps working, the new one works too', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'admin' });
    await signIn(page, person);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('deploy');
    await page.keyboard.press('Enter');
    const oldSecret = await page.getByLabel('Secret key of “deploy”').inputValue();
    await page.getByRole('button', { name: 'Done' }).click();

    await page.getByRole('row').filter({ hasText: 'deploy' }).getByRole('button', { name: 'Rotate deploy' }).click();
    const rotate = page.getByRole('dialog', { name: 'Rotate “deploy”' });
    await rotate.waitFor();
    await rotate.getByLabel('Keep the old key working?').selectOption({ label: 'For 1 hour' });
    await rotate.getByRole('button', { name: 'Rotate key' }).click();
    const shown = page.getByRole('dialog', { name: 'Your rotated API key' });
    await shown.waitFor();
    const newSecret = await shown.getByLabel('Secret key of “deploy”').inputValue();
    expect(newSecret).not.toBe(oldSecret);
    await shown.getByRole('button', { name: 'Done' }).click();

    const rows = page.getByRole('row').filter({ hasText: 'deploy' });
    await rows.filter({ hasText: 'Retiring' }).waitFor();
    expect(await rows.count()).toBe(2);
    for (const secret of [oldSecret, newSecret]) {
      expect((await fetch(`${srv.url}/v1/agents`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    }
    await close(tab);
  });

  it('keeps the session over a reload (a new access token, the refresh token rotated), and sign-out ends it', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'owner' });
    await signIn(page, person);
    const first = await storedRefreshToken(page);
    expect(first).toMatch(/^rt_/);
    // The access token is kept in memory only.
    const stored = await page.evaluate(() => [...Object.values(localStorage), ...Object.values(sessionStorage)].join(' '));
    expect(stored).not.toMatch(/eyJ/);

    await page.reload();
    await heading(page, 'API keys');
    const second = await storedRefreshToken(page);
    expect(second).toMatch(/^rt_/);
    expect(second).not.toBe(first);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
    expect(await page.getByText('You are signed out.').count()).toBe(1);
    expect(await storedRefreshToken(page)).toBeNull();
    // The session is over on the server too.
    const refresh = await fetch(`${srv.url}/v1/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: second }) });
    expect(refresh.status).toBe(401);
    expect((await refresh.json() as { error: { code: string } }).error.code).toBe('invalid_refresh_token');

    await page.reload();
    await heading(page, 'Sign in');
    await close(tab);
  });

  it('shows the API\'s message for a wrong password in an alert, and signs in with the keyboard alone', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'owner' });
    const message = await wrongPasswordMessage(person.email);
    await page.goto('/dashboard');
    await heading(page, 'Sign in');

    await page.keyboard.press('Tab');
    expect((await activeElement(page)).id).toBe('email');
    // The focus is visible: the focused control draws a ring.
    expect(await focusRing(page)).toBe('2px solid');
    await page.keyboard.type(person.email);
    await page.keyboard.press('Tab');
    expect((await activeElement(page)).id).toBe('password');
    await page.keyboard.type('not the password');
    await page.keyboard.press('Enter');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe(message);

    expect((await activeElement(page)).id).toBe('password');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type(person.password);
    await page.keyboard.press('Enter');
    await heading(page, 'Inbox');
    // The first page's title has the focus.
    expect((await activeElement(page)).tag).toBe('h1');

    // In the app: a page opened from the navigation puts the focus on its title; Tab reaches "Create key";
    // Enter opens the dialog with the focus in its field; Escape closes it and the focus returns to the button.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'API keys' }).focus();
    await page.keyboard.press('Enter');
    await heading(page, 'API keys');
    expect((await activeElement(page)).tag).toBe('h1');
    await page.keyboard.press('Tab');
    expect((await activeElement(page)).text).toBe('Create key');
    expect(await focusRing(page)).toBe('2px solid');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Create an API key' }).waitFor();
    expect((await activeElement(page)).id).toBe('key-name');
    await page.keyboard.type('typed');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Your new API key' }).waitFor();
    expect((await activeElement(page)).text).toBe('Copy');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    expect((await activeElement(page)).text).toBe('Create key');
    await close(tab);
  });

  it('asks which organization when the person has several, and remembers the choice', async () => {
    const tab = await open();
    const { page } = tab;
    const second = await srv.addOrganization('Second org');
    const person = await srv.addPerson({ role: 'operator' });
    await srv.parley.store.memberships.add({ org_id: second.orgId, user_id: person.userId, role: 'admin', created_at: new Date().toISOString() });

    await signIn(page, person, 'Choose an organization');
    await page.getByRole('button', { name: /Second org/ }).click();
    await heading(page, 'Inbox');
    expect(await page.getByRole('banner').textContent()).toContain('Second org');
    expect(await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents()).toEqual(['Inbox', 'API keys', 'Agents', 'Knowledge', 'Usage', 'Members', 'Webhooks']);

    await page.reload();
    await heading(page, 'Inbox');
    expect(await page.getByRole('banner').textContent()).toContain('Second org');

    // An operator in the other organization: no key management there.
    await page.getByRole('link', { name: 'Switch organization' }).click();
    await page.getByRole('button', { name: /Test org/ }).click();
    await heading(page, 'Inbox');
    expect(await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents()).toEqual(['Inbox', 'Agents', 'Knowledge', 'Members']);
    // The keys page, asked for by its address, opens the inbox instead.
    await page.goto('/dashboard/keys');
    await heading(page, 'Inbox');
    expect(new URL(page.url()).pathname).toBe('/dashboard/inbox');
    await close(tab);
  });

  it('lists agents with their model and published state', async () => {
    const tab = await open();
    const { page } = tab;
    const org = await srv.addOrganization('Agents org');
    const person = await srv.addPerson({ role: 'operator', orgId: org.orgId });
    const quiet = await (await srv.api('/v1/agents', { key: org.apiKey, body: { name: 'Quiet agent', description: 'Answers quietly.' } })).json() as AgentRecord;
    // Publishing from the API comes later; the store can already hold a published agent.
    const publicKey = 'pk_0123456789abcdefghijklmnopqrstuv';
    await srv.parley.store.agents.create({
      ...quiet, id: newId('agt'), org_id: org.orgId, name: 'Public agent', description: 'Answers anyone.', published: true, public_key: publicKey,
    });

    await signIn(page, person, 'Agents');
    const row = (name: string) => page.getByRole('row').filter({ hasText: name });
    expect(await row('Public agent').textContent()).toContain('Published');
    expect(await row('Public agent').textContent()).toContain(publicKey);
    expect(await row('Quiet agent').textContent()).toContain('Not published');
    expect(await row('Quiet agent').textContent()).toContain('builtin / builtin');
    await close(tab);
  });

  it('members: an owner invites by e-mail with a role, changes a role and removes; the last owner\'s 409 is shown', async () => {
    const tab = await open();
    const { page } = tab;
    const org = await srv.addOrganization('Members org');
    const owner = await srv.addPerson({ role: 'owner', orgId: org.orgId });
    const newcomer = await srv.addPerson({ orgId: null });
    await signIn(page, owner);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Members' }).click();
    await heading(page, 'Members');

    await page.getByLabel('E-mail').fill(newcomer.email);
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('status').filter({ hasText: `${newcomer.email} is invited as admin: they become a member when they accept.` }).waitFor();
    // Not a member before accepting.
    expect(await page.getByRole('row').filter({ hasText: newcomer.email }).count()).toBe(0);
    // The newcomer accepts (through the API here; the next test does it in the dashboard).
    const theirs = await srv.login(newcomer.email, newcomer.password);
    const me = await (await srv.api('/v1/me', { headers: { authorization: `Bearer ${theirs.access_token}` } })).json() as { invitations: Array<{ id: string }> };
    expect((await srv.api(`/v1/me/invitations/${me.invitations[0]!.id}/accept`, { method: 'POST', headers: { authorization: `Bearer ${theirs.access_token}` } })).status).toBe(200);
    await page.reload();
    await heading(page, 'Members');
    const newRow = page.getByRole('row').filter({ hasText: newcomer.email });
    expect(await newRow.getByLabel(`Role of ${newcomer.email}`).inputValue()).toBe('admin');
    await page.screenshot({ path: join(SHOTS, 'dashboard-members.png') });

    await newRow.getByLabel(`Role of ${newcomer.email}`).selectOption('operator');
    await page.getByRole('status').filter({ hasText: `${newcomer.email} is now operator.` }).waitFor();

    // The only owner cannot step down: the API's 409 last_owner message is shown, the choice is undone.
    const ownRole = page.getByLabel(`Role of ${owner.email}`);
    await ownRole.selectOption('admin');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe('An organization keeps at least one owner; make someone else an owner first.');
    expect(await ownRole.inputValue()).toBe('owner');

    await newRow.getByRole('button', { name: `Remove ${newcomer.email}` }).click();
    const confirm = page.getByRole('dialog', { name: `Remove ${newcomer.email}?` });
    await confirm.getByRole('button', { name: 'Remove member' }).click();
    await page.getByRole('status').filter({ hasText: `${newcomer.email} was removed.` }).waitFor();
    await newRow.waitFor({ state: 'detached' });

    const session = await srv.login(owner.email, owner.password);
    const members = await (await srv.api('/v1/members', { headers: { authorization: `Bearer ${session.access_token}`, 'x-org-id': org.orgId } })).json() as { data: Array<{ email: string; role: string }> };
    expect(members.data.map((m) => [m.email, m.role])).toEqual([[owner.email, 'owner']]);
    await close(tab);
  });

  it('invitations: shown at sign-in and in the header; declined or accepted in the dashboard; a member leaves', async () => {
    const tab = await open();
    const { page } = tab;
    const inviting = await srv.addOrganization('Inviting org');
    const other = await srv.addOrganization('Other inviting org');
    const admin = await srv.signIn({ role: 'admin', orgId: inviting.orgId });
    const otherAdmin = await srv.signIn({ role: 'admin', orgId: other.orgId });
    const person = await srv.addPerson({ orgId: null });
    for (const [headers, role] of [[admin.headers, 'operator'], [otherAdmin.headers, 'admin']] as const) {
      expect((await srv.api('/v1/members', { headers, body: { email: person.email, role } })).status).toBe(202);
    }

    // No organization yet: the picker lists the two invitations.
    await signIn(page, person, 'Choose an organization');
    const invitations = page.getByRole('list', { name: 'Invitations to organizations' });
    await invitations.waitFor();
    expect((await invitations.getByRole('listitem').allTextContents()).map((t) => t.replace(/Until.*/, '').trim())).toEqual(['Other inviting org Admin', 'Inviting org Operator']);
    await page.screenshot({ path: join(SHOTS, 'dashboard-invitations.png') });
    await page.getByRole('button', { name: 'Decline the invitation to Other inviting org' }).click();
    await page.getByRole('status').filter({ hasText: 'You declined the invitation to Other inviting org.' }).waitFor();
    expect(await invitations.getByRole('listitem').count()).toBe(1);
    // Accepting makes them a member: the dashboard opens the organization.
    await page.getByRole('button', { name: 'Accept the invitation to Inviting org' }).click();
    await heading(page, 'Inbox');
    expect(await page.getByRole('banner').textContent()).toContain('Inviting org');
    expect(await page.getByRole('banner').getByRole('link', { name: /invitation/ }).count()).toBe(0);

    // A new invitation shows in the header, whatever the page.
    expect((await srv.api('/v1/members', { headers: otherAdmin.headers, body: { email: person.email, role: 'operator' } })).status).toBe(202);
    await page.reload();
    await heading(page, 'Inbox');
    await page.getByRole('banner').getByRole('link', { name: '1 invitation' }).click();
    await heading(page, 'Choose an organization');
    await page.getByRole('button', { name: /Inviting org/ }).click();
    await heading(page, 'Inbox');

    // An operator leaves the organization from the Members page.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Members' }).click();
    await heading(page, 'Members');
    await page.getByRole('button', { name: 'Leave Inviting org' }).click();
    await page.getByRole('dialog', { name: 'Leave Inviting org?' }).getByRole('button', { name: 'Leave' }).click();
    await heading(page, 'Choose an organization');
    const session = await srv.login(person.email, person.password);
    expect(session.organizations).toEqual([]);
    await close(tab);
  });

  for (const withoutWebLocks of [false, true]) {
    it(`tabs opened at the same moment refresh one after the other, each with the newest token (${withoutWebLocks ? 'localStorage lock: no Web Locks' : 'Web Locks'})`, async () => {
      const tab = await open({ withoutWebLocks });
      const person = await srv.addPerson({ role: 'owner' });
      await signIn(tab.page, person);
      // Every refresh is held for a moment on its way, so that tabs that did not wait for each other
      // would have two refreshes under way at once; the route counts how many are.
      const refreshes: number[] = [];
      let inFlight = 0;
      let mostInFlight = 0;
      await tab.context.route('**/v1/auth/refresh', async (route) => {
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        await new Promise((r) => setTimeout(r, 300));
        const response = await route.fetch();
        refreshes.push(response.status());
        inFlight--;
        await route.fulfill({ response });
      });
      const others = [await tab.context.newPage(), await tab.context.newPage()];
      for (const p of others) watchProblems(p, tab.problems);

      // Three tabs load at once; each needs an access token, so each refreshes.
      await Promise.all([tab.page.reload(), ...others.map((p) => p.goto('/dashboard'))]);
      const landed = await Promise.all([tab.page, ...others].map(async (p) => {
        const title = p.getByRole('heading', { level: 1, name: /^(API keys|Inbox|Sign in)$/ });
        await title.waitFor();
        return title.textContent();
      }));
      expect(landed).toEqual(['API keys', 'Inbox', 'Inbox']);
      expect(refreshes).toEqual([200, 200, 200]);
      expect(mostInFlight).toBe(1);
      // Had two of them sent the same token, the server would have ended the session (reuse).
      await tab.page.reload();
      await heading(tab.page, 'API keys');
      await close(tab);
    });
  }

  it('after a 401 expired_token it refreshes once and sends the request again', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'owner' });
    await signIn(page, person);
    const refreshes: number[] = [];
    page.on('response', (r) => { if (r.url().endsWith('/v1/auth/refresh')) refreshes.push(r.status()); });
    let expired = 0;
    let real = 0;
    await page.route('**/v1/agents?*', async (route) => {
      if (expired === 0) {
        expired++;
        await route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: { type: 'authentication_error', code: 'expired_token', message: 'The access token has expired.' } }) });
      } else {
        real++;
        await route.continue();
      }
    });
    await page.getByRole('link', { name: 'Agents' }).click();
    await heading(page, 'Agents');
    await page.getByText('No agents yet.').or(page.getByRole('table')).first().waitFor();
    expect([expired, real]).toEqual([1, 1]);
    expect(refreshes).toEqual([200]);
    await close(tab);
  });

  it('a refused refresh ends the session and shows the sign-in page', async () => {
    const tab = await open();
    const { page } = tab;
    const person = await srv.addPerson({ role: 'owner' });
    await signIn(page, person);
    // The session ends elsewhere (signed out from another device); this tab still has its access token.
    const token = await storedRefreshToken(page);
    expect((await fetch(`${srv.url}/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: token }) })).status).toBe(204);
    await page.route('**/v1/agents?*', (route) => route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: { type: 'authentication_error', code: 'expired_token', message: 'The access token has expired.' } }) }));
    const refused = page.waitForResponse((r) => r.url().endsWith('/v1/auth/refresh'));
    await page.getByRole('link', { name: 'Agents' }).click();
    expect((await refused).status()).toBe(401);
    await heading(page, 'Sign in');
    expect(await page.getByText('Your session has ended. Sign in again.').count()).toBe(1);
    expect(await storedRefreshToken(page)).toBeNull();
    await close(tab);
  });

  it('refreshes about a minute before the access token expires (browser clock fast-forwarded)', async () => {
    const tab = await open();
    const { page } = tab;
    await page.clock.install();
    const person = await srv.addPerson({ role: 'owner' });
    await signIn(page, person);
    const before = await storedRefreshToken(page);
    const refreshes: number[] = [];
    page.on('response', (r) => { if (r.url().endsWith('/v1/auth/refresh')) refreshes.push(r.status()); });

    // expires_in is 900 s: nothing happens in the first 839 s ...
    await page.clock.fastForward(839_000);
    await page.getByRole('link', { name: 'Agents' }).click();
    await heading(page, 'Agents');
    expect(refreshes).toEqual([]);
    // ... and at 840 s (a minute before expiry) the tab refreshes on its own.
    const refreshed = page.waitForResponse((r) => r.url().endsWith('/v1/auth/refresh'));
    await page.clock.fastForward(2_000);
    expect((await refreshed).status()).toBe(200);
    await page.waitForFunction(([key, old]) => localStorage.getItem(key!) !== old, [REFRESH_TOKEN_KEY, before]);
    expect(refreshes).toEqual([200]);
    await close(tab);
  });

  it('works at 360 px wide: nothing wider than the screen', async () => {
    const tab = await open({ width: 360, height: 780 });
    const { page } = tab;
    const person = await srv.addPerson({ role: 'owner' });
    await signIn(page, person);
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow()).toBe(0);
    await page.getByRole('link', { name: 'Members' }).click();
    await heading(page, 'Members');
    expect(await overflow()).toBe(0);
    await page.getByRole('link', { name: 'API keys' }).click();
    await heading(page, 'API keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('phone');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Your new API key' }).waitFor();
    expect(await overflow()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'dashboard-360-secret.png') });
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await overflow()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'dashboard-360.png'), fullPage: true });
    await close(tab);
  });
});

describe.skipIf(!chromiumFound)('npm start', () => {
  it('serves the dashboard, where the demo owner of data/initial-credentials.json signs in and sees the demo agent', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-dashboard-'));
    const main = await startMain(dataDir);
    try {
      const creds = await credentialsOf(dataDir);
      const context = await browser.newContext({ baseURL: main.url, viewport: { width: 1200, height: 800 } });
      const page = await context.newPage();
      const problems: string[] = [];
      watchProblems(page, problems);
      await page.goto('/dashboard');
      await heading(page, 'Sign in');
      await page.getByLabel('E-mail').fill(creds.owner_email);
      await page.getByLabel('Password').fill(creds.owner_password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await heading(page, 'Inbox');
      expect(await page.getByRole('banner').textContent()).toContain('Demo organization');
      await page.getByRole('link', { name: 'Agents' }).click();
      await page.getByRole('row').filter({ hasText: 'Parley Guide' }).waitFor();
      expect(problems).toEqual([]);
      await context.close();
    } finally {
      main.child.kill('SIGTERM');
      await exitOf(main.child);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

