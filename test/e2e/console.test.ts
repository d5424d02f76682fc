/**
 * The operator console in a real browser (Debian's Chromium, driven by playwright-core) against a real
 * Parley (uWS on a free port, SQLite on disk, the builtin model answering from a knowledge base): the
 * visitor side is driven through the public HTTP API and a listen-only WebSocket (undici), as the widget
 * would; the operator side is the dashboard. Screenshots go to test-results/.
 *
 * The tests skip, saying so, only when /usr/bin/chromium is missing.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Browser, type Page, type WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeTab, hasChromium, launchChromium, openTab, type Tab, submitDashboardSignIn } from '../helpers/browser.js';
import { createAgent, publish, wsUrl } from '../helpers/live.js';
import { startTestServer, type TestPerson, type TestServer } from '../helpers/server.js';
import { readSse, waitFor } from '../helpers/sse-client.js';
import { openSocket, type Frame, type TestSocket } from '../helpers/ws-client.js';

// Browser globals used inside page.evaluate() callbacks (they run in Chromium, not in Node).
declare const document: any;
declare const navigator: any;
declare function getComputedStyle(element: unknown): any;

const chromiumFound = hasChromium("the console's browser tests");

const root = resolve(import.meta.dirname, '../..');
const SHOTS = join(root, 'test-results');

const DOC = `# Refunds

Refunds are paid back to the original card within fourteen days of the return.
A refund needs the order number and the receipt.

# Shipping

Parcels leave the warehouse the next working day. Express shipping costs nine euros.
`;

let srv: TestServer;
let browser: Browser;
let agentId: string;
let publicKey: string;
const sockets: TestSocket[] = [];

beforeAll(async () => {
  if (!chromiumFound) return;
  expect(existsSync(join(root, 'dist/web/dashboard/index.html')), 'run `npm run build` first (it builds the dashboard)').toBe(true);
  mkdirSync(SHOTS, { recursive: true });
  // Words 90 ms apart: the agent's reply streams for a few seconds, long enough to watch it being written.
  srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '90' });
  const kb = (await (await srv.api('/v1/knowledge-bases', { body: { name: 'Help center' } })).json()) as { id: string };
  const up = await srv.api(`/v1/knowledge-bases/${kb.id}/documents`, { body: { title: 'Refunds and shipping', content: DOC, content_type: 'text/markdown' } });
  expect(up.status).toBe(202);
  const docId = ((await up.json()) as { id: string }).id;
  await waitFor(async () => {
    const d = (await (await srv.api(`/v1/knowledge-bases/${kb.id}/documents/${docId}`)).json()) as { status: string };
    return d.status === 'ready' ? true : undefined;
  }, 20_000, 'document ready');
  agentId = await createAgent(srv, { name: 'Help desk', knowledge_base_ids: [kb.id], tools: ['search_knowledge', 'handoff_to_human'] });
  publicKey = await publish(srv, agentId);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.drop();
  await browser?.close();
  await srv?.close();
});

/** A fresh browser profile with one page (clipboard allowed), watched for uncaught errors and CSP violations. */
const open = (opts: { width?: number; height?: number } = {}): Promise<Tab> => openTab(browser, srv.url, { ...opts, clipboard: true });
const close = closeTab;

const heading = (page: Page, name: string | RegExp) => page.getByRole('heading', { name, level: 1 }).waitFor();

/** Signs in and waits for the inbox with its socket live. */
async function signIn(page: Page, person: TestPerson): Promise<void> {
  await submitDashboardSignIn(page, person);
  await heading(page, 'Inbox');
  await page.locator('.inbox-head [data-live="live"]').waitFor();
}

/** A visitor's first message through the public API (one-shot): the conversation and its visitor token. */
async function visitorAsks(message: string): Promise<{ conversationId: string; token: string; content: string }> {
  const r = await fetch(`${srv.url}/v1/public/agents/${publicKey}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }) });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { conversation_id: string; visitor_token: string; content: string };
  return { conversationId: body.conversation_id, token: body.visitor_token, content: body.content };
}

/** A named visitor's first message (the name travels in `metadata`, which the console shows). */
async function namedVisitorAsks(name: string, message: string): Promise<{ conversationId: string; token: string; content: string }> {
  const r = await fetch(`${srv.url}/v1/public/agents/${publicKey}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message, metadata: { name } }) });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { conversation_id: string; visitor_token: string; content: string };
  return { conversationId: body.conversation_id, token: body.visitor_token, content: body.content };
}

/** The visitor asks for a person (the public handoff). */
async function visitorWantsPerson(c: { conversationId: string; token: string }, reason: string): Promise<void> {
  const r = await fetch(`${srv.url}/v1/public/agents/${publicKey}/conversations/${c.conversationId}/handoff`, {
    method: 'POST', headers: { 'x-visitor-token': c.token, 'content-type': 'application/json' }, body: JSON.stringify({ reason }),
  });
  expect(r.status).toBe(200);
}

/** The listen-only socket of the visitor (what the widget keeps open), authenticated. */
async function visitorListens(c: { conversationId: string; token: string }): Promise<TestSocket> {
  const s = await openSocket(wsUrl(srv, `/v1/public/agents/${publicKey}/conversations/${c.conversationId}/ws`));
  sockets.push(s);
  s.send({ type: 'auth', visitor_token: c.token });
  return s;
}

const visitorName = (conversationId: string) => `Visitor ${conversationId.slice(-4).toUpperCase()}`;
const row = (page: Page, conversationId: string) => page.locator(`.conv-item[data-conversation="${conversationId}"]`);
const statusOf = async (conversationId: string) => ((await (await srv.api(`/v1/conversations/${conversationId}`)).json()) as { status: string }).status;

describe.skipIf(!chromiumFound)('the operator console in Chromium', () => {
  it('a handoff request shows live; the operator takes over and replies to the visitor\'s socket, resolves (the agent streams again) and closes', async () => {
    const tab = await open();
    const { page } = tab;
    const operator = await srv.addPerson({ role: 'operator' });
    await signIn(page, operator);
    const nav = page.getByRole('navigation', { name: 'Sections' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Inbox', 'Agents', 'Knowledge', 'Members']);

    // A visitor chats: the conversation appears in the inbox without a reload, with its last message.
    const visitor = await visitorAsks('How long do refunds take?');
    expect(visitor.content).toContain('fourteen days');
    await row(page, visitor.conversationId).filter({ hasText: 'fourteen days' }).waitFor();
    expect(await row(page, visitor.conversationId).locator('[data-status]').getAttribute('data-status')).toBe('active');
    expect(await nav.getByTestId('waiting-count').count()).toBe(0);
    const listen = await visitorListens(visitor);

    // The visitor asks for a person: the row turns "Waiting", goes first, and the navigation counts it.
    await visitorWantsPerson(visitor, 'Wants to talk about a refund');
    await row(page, visitor.conversationId).locator('[data-status="pending_handoff"]').waitFor();
    await nav.getByRole('link', { name: /^Inbox\W+1 waiting for a person$/ }).waitFor();
    expect(await page.locator('.conv-item').first().getAttribute('data-conversation')).toBe(visitor.conversationId);
    expect(await page.getByRole('button', { name: /^Waiting/ }).textContent()).toBe('Waiting1');
    await page.screenshot({ path: join(SHOTS, 'console-inbox-waiting.png') });

    // Open it: the thread so far, the agent's reply with its sources.
    await row(page, visitor.conversationId).click();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/inbox/${visitor.conversationId}`);
    const view = page.getByRole('region', { name: visitorName(visitor.conversationId) });
    await view.locator('[data-live="live"]').waitFor();
    const log = view.getByRole('log');
    await log.locator('.msg-agent').first().waitFor();
    expect(await log.locator('.msg').evaluateAll((els) => els.map((e: any) => e.dataset.role))).toEqual(['visitor', 'agent']);
    expect(await log.locator('.msg-visitor .msg-body').textContent()).toBe('How long do refunds take?');
    expect(await log.locator('.msg-agent .msg-body').textContent()).toBe(visitor.content);
    expect(await log.locator('.msg-agent').getByRole('list', { name: 'Sources' }).textContent()).toContain('Refunds and shipping');
    const takeOver = view.getByRole('button', { name: 'Take over' });
    const resolveButton = view.getByRole('button', { name: 'Resolve' });
    const closeButton = view.getByRole('button', { name: 'Close', exact: true });
    expect([await takeOver.isEnabled(), await resolveButton.isEnabled(), await closeButton.isEnabled()]).toEqual([true, true, true]);

    // Take over.
    await takeOver.click();
    await view.locator('.conv-sub [data-status="handed_off"]').waitFor();
    expect(await statusOf(visitor.conversationId)).toBe('handed_off');
    expect([await takeOver.isEnabled(), await resolveButton.isEnabled()]).toEqual([false, true]);
    await nav.getByRole('link', { name: 'Inbox', exact: true }).waitFor();

    // Reply with the keyboard: the message shows in the thread as the operator's, and reaches the visitor's socket.
    const reply = view.getByLabel(`Reply to ${visitorName(visitor.conversationId)}`);
    await reply.focus();
    await page.keyboard.type('Hi, this is Ada. I can help with the refund.');
    await page.keyboard.press('Enter');
    await log.locator('.msg-operator').filter({ hasText: 'Hi, this is Ada. I can help with the refund.' }).waitFor();
    // The box empties once the POST is answered; the visitor's socket may show the message before that.
    await expect.poll(() => reply.inputValue(), { timeout: 5000 }).toBe('');
    const pushed = await listen.until((f: Frame) => f.type === 'done' && f.role === 'operator', 10_000, 'the operator push');
    const push = pushed.filter((f) => f.role === 'operator');
    expect(push.map((f) => f.type)).toEqual(['token', 'message', 'done']);
    expect(push[0]!.delta).toBe('Hi, this is Ada. I can help with the refund.');
    const operatorMessageId = await log.locator('.msg-operator').getAttribute('data-message-id');
    expect(push[1]!.message_id).toBe(operatorMessageId);
    // Once in the thread, though both the answer of the POST and the socket told of it.
    expect(await log.locator('.msg-operator').count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'console-conversation.png') });

    // Resolve: the agent answers the visitor's next question, streaming into the console as it is written.
    await resolveButton.click();
    await view.locator('.conv-sub [data-status="active"]').waitFor();
    expect(await statusOf(visitor.conversationId)).toBe('active');
    const streamed = readSse(`${srv.url}/v1/public/agents/${publicKey}/chat`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'How much does express shipping cost?', conversation_id: visitor.conversationId, visitor_token: visitor.token, stream: true }),
    });
    const writing = log.locator('.msg-agent.msg-streaming');
    await writing.waitFor({ timeout: 15_000 });
    // Part of the reply is on screen while the turn is still running.
    await page.waitForFunction(() => (document.querySelector('.msg-agent.msg-streaming .msg-body')?.textContent ?? '').trim().split(/\s+/).length >= 3);
    expect(await writing.getAttribute('aria-busy')).toBe('true');
    await page.screenshot({ path: join(SHOTS, 'console-streaming.png') });
    const turn = await streamed;
    const answer = turn.events.filter((e) => e.data.type === 'token').map((e) => e.data.delta).join('');
    expect(answer).toContain('nine euros');
    await writing.waitFor({ state: 'detached', timeout: 15_000 });
    const last = log.locator('.msg').last();
    expect(await last.getAttribute('data-role')).toBe('agent');
    expect(await last.locator('.msg-body').textContent()).toBe(answer);
    expect(await last.getByRole('list', { name: 'Sources' }).textContent()).toContain('Refunds and shipping');
    expect(await log.locator('.msg').evaluateAll((els) => els.map((e: any) => e.dataset.role))).toEqual(['visitor', 'agent', 'operator', 'visitor', 'agent']);
    // The visitor's socket got the same turn.
    const heard = await listen.until((f: Frame) => f.type === 'done' && f.role === undefined, 10_000, "the agent's turn");
    expect(heard.filter((f) => f.type === 'token').map((f) => f.delta).join('')).toBe(answer);
    await page.screenshot({ path: join(SHOTS, 'console-resolved.png') });

    // Close: every action is off and the reply box says the conversation is closed.
    await closeButton.click();
    await view.locator('.conv-sub [data-status="closed"]').waitFor();
    expect(await statusOf(visitor.conversationId)).toBe('closed');
    const closedBox = view.getByLabel('Reply (the conversation is closed)');
    expect(await closedBox.isDisabled()).toBe(true);
    expect(await closedBox.getAttribute('placeholder')).toBe('This conversation is closed.');
    expect(await view.locator('#reply-hint').textContent()).toBe('This conversation is closed: nobody can write in it any more.');
    expect([await takeOver.isEnabled(), await resolveButton.isEnabled(), await closeButton.isEnabled()]).toEqual([false, false, false]);
    expect(await view.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);
    await row(page, visitor.conversationId).locator('[data-status="closed"]').waitFor();
    await page.screenshot({ path: join(SHOTS, 'console-closed.png') });
    await close(tab);
  }, 90_000);

  it('shows the API\'s 409 when the conversation was closed behind a stale view, and then shows it closed', async () => {
    const tab = await open();
    const { page } = tab;
    const operator = await srv.addPerson({ role: 'operator' });
    const visitor = await visitorAsks('Do you ship on weekends?');
    await visitorWantsPerson(visitor, 'question');
    await signIn(page, operator);
    // The conversation's socket is held open but silent (a stalled network): the view learns of no change.
    await page.routeWebSocket(/\/v1\/conversations\/conv_[^/]+\/ws/, () => {});
    await row(page, visitor.conversationId).click();
    const view = page.getByRole('region', { name: visitorName(visitor.conversationId) });
    await view.getByRole('button', { name: 'Take over' }).click();
    await view.locator('.conv-sub [data-status="handed_off"]').waitFor();

    // Someone else closes it.
    expect((await srv.api(`/v1/conversations/${visitor.conversationId}/close`, { method: 'POST' })).status).toBe(200);
    const refused = await srv.api(`/v1/conversations/${visitor.conversationId}/messages`, { body: { content: 'x' } });
    expect(refused.status).toBe(409);
    const apiMessage = ((await refused.json()) as { error: { code: string; message: string } }).error;
    expect(apiMessage.code).toBe('conversation_closed');

    await view.getByLabel(`Reply to ${visitorName(visitor.conversationId)}`).fill('Are you still there?');
    await view.getByRole('button', { name: 'Send' }).click();
    const alert = view.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe(apiMessage.message);
    // The view read the conversation again: it is closed now.
    await view.locator('.conv-sub [data-status="closed"]').waitFor();
    expect(await view.getByLabel('Reply (the conversation is closed)').isDisabled()).toBe(true);
    await close(tab);
  }, 60_000);

  it('erases a conversation after a confirmation (dismissed first: nothing happens), and an owner sets the retention on the Usage page', async () => {
    const tab = await open();
    const { page } = tab;
    const owner = await srv.addPerson({ role: 'owner' });
    const visitor = await visitorAsks('Please forget me after this');
    await signIn(page, owner);
    await row(page, visitor.conversationId).click();
    const view = page.getByRole('region', { name: visitorName(visitor.conversationId) });
    const erase = view.getByRole('button', { name: 'Erase conversation' });
    const dialogs: string[] = [];
    page.once('dialog', (d) => { dialogs.push(d.message()); void d.dismiss(); });
    await erase.click();
    await waitFor(() => (dialogs.length === 1 ? true : undefined), 5000, 'the confirmation');
    expect(dialogs[0]).toMatch(/^Erase this conversation for good\?/);
    expect(await statusOf(visitor.conversationId)).toBe('active');
    page.once('dialog', (d) => { void d.accept(); });
    await erase.click();
    await heading(page, 'Inbox');
    await waitFor(async () => ((await srv.api(`/v1/conversations/${visitor.conversationId}`)).status === 404 ? true : undefined), 5000, 'the erasure');
    expect(await row(page, visitor.conversationId).count()).toBe(0);

    await page.getByRole('link', { name: 'Usage' }).click();
    await heading(page, 'Usage');
    const days = page.getByLabel('Erase conversations idle for (days)');
    expect(await days.inputValue()).toBe('');
    expect(await page.getByText('Empty: the server\'s default, keep everything.', { exact: false }).count()).toBe(1);
    await days.fill('45');
    await page.getByRole('button', { name: 'Save retention' }).click();
    await page.getByText('Retention saved.').waitFor();
    expect(await (await srv.api('/v1/organization')).json()).toMatchObject({ retention_days: 45 });
    await days.fill('');
    await page.getByRole('button', { name: 'Save retention' }).click();
    await waitFor(async () => (((await (await srv.api('/v1/organization')).json()) as { retention_days: number | null }).retention_days === null ? true : undefined), 5000, 'cleared');
    await close(tab);
  }, 60_000);

  it('filters by status, agent and text; the inbox socket reconnects after a drop and catches up on what it missed', async () => {
    const tab = await open();
    const { page } = tab;
    const other = await createAgent(srv, { name: 'Sales bot', knowledge_base_ids: [] });
    const otherKey = await publish(srv, other);
    // The inbox socket goes through a relay the test can cut; the relay refuses connections while `down`.
    let down = false;
    const relays: WebSocketRoute[] = [];
    await tab.context.routeWebSocket(/\/v1\/inbox\/ws/, (ws) => {
      if (down) { void ws.close({ code: 1011, reason: 'relay down' }); return; }
      relays.push(ws);
      ws.connectToServer();
    });
    const operator = await srv.addPerson({ role: 'operator' });
    await signIn(page, operator);
    const waiting = await visitorAsks('Where is my parcel?');
    await visitorWantsPerson(waiting, 'parcel');
    const sales = await fetch(`${srv.url}/v1/public/agents/${otherKey}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Hello sales' }) });
    const salesId = ((await sales.json()) as { conversation_id: string }).conversation_id;
    await row(page, salesId).waitFor();
    await row(page, waiting.conversationId).locator('[data-status="pending_handoff"]').waitFor();

    // Status: only the waiting ones.
    await page.getByRole('button', { name: /^Waiting/ }).click();
    expect(await page.getByRole('button', { name: /^Waiting/ }).getAttribute('aria-pressed')).toBe('true');
    const shown = () => page.locator('.conv-item [data-status]').evaluateAll((els) => els.map((e: any) => e.dataset.status));
    expect((await shown()).length).toBeGreaterThan(0);
    expect(new Set(await shown())).toEqual(new Set(['pending_handoff']));
    await page.getByRole('button', { name: /^All/ }).click();
    // Agent.
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'Sales bot' });
    expect(await page.locator('.conv-item').evaluateAll((els) => els.map((e: any) => e.dataset.conversation))).toEqual([salesId]);
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'All agents' });
    // Text (the last message).
    await page.getByLabel('Search conversations').fill('parcel');
    await row(page, salesId).waitFor({ state: 'detached' });
    expect(await row(page, waiting.conversationId).count()).toBe(1);
    await page.getByLabel('Search conversations').fill('');

    // The relay drops the socket and refuses the next attempts: the inbox says so and retries.
    down = true;
    await relays[0]!.close({ code: 1011, reason: 'cut' });
    await page.locator('.inbox-head [data-live="reconnecting"]').waitFor();
    // Meanwhile a visitor asks for a person.
    const missed = await visitorAsks('I need to change my address');
    await visitorWantsPerson(missed, 'address');
    down = false;
    await page.locator('.inbox-head [data-live="live"]').waitFor({ timeout: 40_000 });
    expect(relays.length).toBeGreaterThanOrEqual(2);
    await row(page, missed.conversationId).locator('[data-status="pending_handoff"]').waitFor();
    // And it is live again: a new event arrives without a reload.
    const after = await visitorAsks('One more question about shipping');
    await row(page, after.conversationId).waitFor();
    await close(tab);
  }, 90_000);

  it('agents page: an admin publishes, copies the embed tag, previews the widget page and unpublishes', async () => {
    const tab = await open();
    const { page } = tab;
    const admin = await srv.addPerson({ role: 'admin' });
    const helperId = await createAgent(srv, { name: 'Website helper', description: 'Answers on the public site.' });
    await signIn(page, admin);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Agents' }).click();
    await heading(page, 'Agents');
    const line = page.getByRole('row').filter({ hasText: 'Website helper' });
    expect(await line.textContent()).toContain('Not published');

    await line.getByRole('button', { name: 'Publish Website helper' }).click();
    await page.getByRole('status').filter({ hasText: '“Website helper” is published' }).waitFor();
    await line.filter({ hasText: 'Published' }).waitFor();
    const agents = (await (await srv.api('/v1/agents?limit=100')).json()) as { data: Array<{ name: string; public_key: string | null }> };
    const key = agents.data.find((a) => a.name === 'Website helper')!.public_key!;
    expect(key).toMatch(/^pk_/);
    expect(await line.textContent()).toContain(key);

    const tagBox = page.getByLabel('Embed tag of “Website helper”', { exact: true });
    const expected = `<script src="${srv.url}/widget.js" data-public-key="${key}" async></script>`;
    expect(await tagBox.inputValue()).toBe(expected);
    await page.getByRole('button', { name: 'Copy the embed tag of “Website helper”' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).first().waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(expected);
    await page.screenshot({ path: join(SHOTS, 'console-agents.png'), fullPage: true });

    // The preview: the tag again, and a sample page (served by Parley) that embeds the widget with it.
    await line.getByRole('link', { name: 'Preview the widget of Website helper' }).click();
    await heading(page, 'Widget preview · Website helper');
    expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe(`/dashboard/preview?agent=${helperId}`);
    const frame = page.frameLocator('iframe[title="Sample page with the chat widget of Website helper"]');
    const script = frame.locator('script[data-public-key]');
    await script.waitFor({ state: 'attached' });
    expect(await script.getAttribute('data-public-key')).toBe(key);
    expect(await script.getAttribute('src')).toBe('/widget.js');
    expect(await script.getAttribute('async')).not.toBeNull();
    const served = await fetch(`${srv.url}/preview/${key}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(served.headers.get('content-security-policy')).toContain("frame-ancestors 'self'");
    expect((await fetch(`${srv.url}/preview/not-a-key`)).status).toBe(404);
    await page.screenshot({ path: join(SHOTS, 'console-preview.png') });

    // Unpublish, confirmed: the key stops working.
    await page.getByRole('link', { name: 'Back to agents' }).click();
    await heading(page, 'Agents');
    await line.getByRole('button', { name: 'Unpublish Website helper' }).click();
    const confirm = page.getByRole('dialog', { name: 'Unpublish “Website helper”?' });
    await confirm.getByRole('button', { name: 'Unpublish' }).click();
    await line.filter({ hasText: 'Not published' }).waitFor();
    const gone = await fetch(`${srv.url}/v1/public/agents/${key}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hi' }) });
    expect(gone.status).toBe(404);
    expect(await page.getByLabel('Embed tag of “Website helper”', { exact: true }).count()).toBe(0);
    await close(tab);
  }, 60_000);

  it('works at 360 px wide: the list, then one conversation with a way back', async () => {
    const tab = await open({ width: 360, height: 780 });
    const { page } = tab;
    const operator = await srv.addPerson({ role: 'operator' });
    const visitor = await visitorAsks('How long do refunds take?');
    await signIn(page, operator);
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    await row(page, visitor.conversationId).waitFor();
    expect(await overflow()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'console-360-inbox.png') });
    await row(page, visitor.conversationId).click();
    const view = page.getByRole('region', { name: visitorName(visitor.conversationId) });
    await view.locator('.msg-agent').waitFor();
    expect(await overflow()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'console-360.png') });
    await view.getByRole('link', { name: '← Inbox' }).click();
    await row(page, visitor.conversationId).waitFor();
    // The agents page too.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Agents' }).click();
    await heading(page, 'Agents');
    await page.getByRole('row').filter({ hasText: 'Help desk' }).waitFor();
    expect(await overflow()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'console-360-agents.png'), fullPage: true });
    await close(tab);
  }, 60_000);

  it('works with the keyboard alone: a row opens with Enter, Take over moves on to the reply box, Enter sends', async () => {
    const tab = await open();
    const { page } = tab;
    const operator = await srv.addPerson({ role: 'operator' });
    const visitor = await visitorAsks('Is there a shop in Lisbon?');
    await visitorWantsPerson(visitor, 'shop');
    await signIn(page, operator);
    const active = () => page.evaluate(() => {
      const el = document.activeElement;
      return { tag: el?.tagName.toLowerCase() ?? '', id: el?.id ?? '', text: el?.textContent?.trim() ?? '', conversation: el?.dataset?.conversation ?? '' };
    });
    const ring = () => page.evaluate(() => { const st = getComputedStyle(document.activeElement); return `${st.outlineWidth} ${st.outlineStyle}`; });

    await page.getByLabel('Search conversations').focus();
    await page.keyboard.type(visitorName(visitor.conversationId));
    await row(page, visitor.conversationId).waitFor();
    expect(await page.locator('.conv-item').count()).toBe(1);
    await page.keyboard.press('Tab');
    expect((await active()).conversation).toBe(visitor.conversationId);
    expect(await ring()).toBe('2px solid');
    await page.keyboard.press('Enter');
    const view = page.getByRole('region', { name: visitorName(visitor.conversationId) });
    await view.locator('[data-live="live"]').waitFor();

    // Tab on from the row into the view: the first control is Take over.
    for (let i = 0; i < 6 && (await active()).text !== 'Take over'; i++) await page.keyboard.press('Tab');
    expect((await active()).text).toBe('Take over');
    await page.keyboard.press('Enter');
    await view.locator('.conv-sub [data-status="handed_off"]').waitFor();
    // The button went disabled; the focus moved on to the reply box.
    await page.waitForFunction(() => document.activeElement?.id === 'reply');
    await page.keyboard.type('Yes, on Rua Augusta.');
    await page.keyboard.press('Enter');
    await view.getByRole('log').locator('.msg-operator').filter({ hasText: 'Yes, on Rua Augusta.' }).waitFor();
    expect((await active()).id).toBe('reply');
    // Shift+Enter is a new line, not a send.
    await page.keyboard.type('Open');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('daily');
    expect(await page.locator('#reply').inputValue()).toBe('Open\ndaily');
    expect(await view.getByRole('log').locator('.msg-operator').count()).toBe(1);
    await close(tab);
  }, 60_000);

  it('a busy inbox: waiting conversations first, the count matches the API, visitors named from metadata (the docs screenshot)', async () => {
    const tab = await open({ width: 1360, height: 820 });
    const { page } = tab;
    const operator = await srv.addPerson({ role: 'operator' });
    const maria = await namedVisitorAsks('Maria Gonzalez', 'How long do refunds take?');
    await visitorWantsPerson(maria, 'refund');
    const tom = await namedVisitorAsks('Tom Becker', 'How much does express shipping cost?');
    const aiko = await namedVisitorAsks('Aiko Tanaka', 'Can I talk to a human, please?');
    const lena = await namedVisitorAsks('Lena Fischer', 'When do parcels leave the warehouse?');
    expect((await srv.api(`/v1/conversations/${lena.conversationId}/takeover`, { method: 'POST' })).status).toBe(200);
    expect((await srv.api(`/v1/conversations/${lena.conversationId}/messages`, { body: { content: 'Hi Lena, yours left this morning.' } })).status).toBe(201);
    // Maria's conversation: taken over, answered, and she writes back (forwarded to people, no agent turn).
    expect((await srv.api(`/v1/conversations/${maria.conversationId}/takeover`, { method: 'POST' })).status).toBe(200);
    await signIn(page, operator);
    await row(page, maria.conversationId).click();
    const view = page.getByRole('region', { name: 'Maria Gonzalez' });
    await view.locator('[data-live="live"]').waitFor();
    await view.getByLabel('Reply to Maria Gonzalez').fill('Hi Maria, I am Ada from the support team. Do you have your order number?');
    await view.getByRole('button', { name: 'Send' }).click();
    await view.locator('.msg-operator').waitFor();
    const answer = await fetch(`${srv.url}/v1/public/agents/${publicKey}/chat`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Yes, it is 4417. I sent the parcel back on Monday.', conversation_id: maria.conversationId, visitor_token: maria.token }),
    });
    expect(((await answer.json()) as { finish_reason: string }).finish_reason).toBe('handoff');
    await view.locator('.msg-visitor').filter({ hasText: 'it is 4417' }).waitFor();
    await view.getByLabel('Reply to Maria Gonzalez').fill('Thanks! I can see it arrived. The refund is on its way.');

    // The list: every waiting conversation comes before any other, and the count is the API's.
    await row(page, aiko.conversationId).locator('[data-status="pending_handoff"]').waitFor();
    await row(page, tom.conversationId).waitFor();
    const pending = ((await (await srv.api('/v1/conversations?status=pending_handoff&limit=100')).json()) as { data: unknown[] }).data.length;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: new RegExp(`^Inbox\\W+${pending} waiting for a person$`) }).waitFor();
    const statuses = await page.locator('.conv-item [data-status]').evaluateAll((els) => els.map((e: any) => e.dataset.status as string));
    const firstOther = statuses.findIndex((st) => st !== 'pending_handoff');
    expect(statuses.slice(firstOther).includes('pending_handoff')).toBe(false);
    expect(statuses.filter((st) => st === 'pending_handoff')).toHaveLength(pending);
    expect(await row(page, tom.conversationId).locator('.conv-item-name').textContent()).toBe('Tom Becker');
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(SHOTS, 'console.png') });

    // Aiko asked the agent for a person: its reply shows the tool it ran and how the turn ended.
    await row(page, aiko.conversationId).click();
    const aikoView = page.getByRole('region', { name: 'Aiko Tanaka' });
    const reply = aikoView.getByRole('log').locator('.msg-agent');
    await reply.waitFor();
    expect(await reply.getByRole('list', { name: 'Tools used' }).textContent()).toContain('Used handoff_to_human');
    expect(await reply.locator('.msg-note').textContent()).toBe('Handed to a person');
    await close(tab);
  }, 90_000);
});
