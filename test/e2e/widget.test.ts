/**
 * The chat widget in a real browser (Debian's Chromium, driven by playwright-core; no browser is ever
 * downloaded) on a page served from another origin than Parley (a node:http server on its own port):
 * a streamed, cited answer; the visitor asks for a person, an operator (driven through the HTTP API)
 * takes over and replies live, resolves, and the agent answers again; two tabs of one visitor, each showing
 * what the other asked, once; the history after a reload; two
 * operator messages sent while the visitor is offline arrive once each after reconnecting; keyboard-only
 * use; a hostile page stylesheet; a 360 px wide screen. Screenshots go to test-results/.
 *
 * The tests skip, saying so, only when /usr/bin/chromium is missing (.ci/run installs it).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium } from '../helpers/browser.js';
import { createAgent, publish } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';

// Browser globals used inside page.evaluate() callbacks (they run in Chromium, not in Node).
declare const document: any;
declare const localStorage: any;
declare function getComputedStyle(element: unknown): any;

const chromiumFound = hasChromium("the widget's browser tests");

const root = resolve(import.meta.dirname, '../..');
const SHOTS = join(root, 'test-results');

const DOC_TITLE = 'Refunds and returns';
const DOC = [
  '# Refunds and returns',
  '',
  'Refunds are paid back to the original card within five business days after we receive the parcel.',
  'A return label is free for every order shipped inside the European Union.',
  '',
  '## Exchanges',
  '',
  'Exchanges for another size are shipped the same day the returned item arrives at our warehouse.',
].join('\n');

let srv: TestServer;
let browser: Browser;
let host: Server;
let hostUrl: string;
let pk: string;

/** The host site: pages with the embed tag, on another origin than Parley. */
function hostPage(path: string): string {
  const url = new URL(path, 'http://x');
  const hostile = url.searchParams.has('hostile');
  const extra = url.searchParams.get('attrs') ?? '';
  const embed = url.searchParams.has('bare') ? '' : `<script src="${srv.url}/widget.js" data-public-key="${pk}" data-title="Acme Support" ${extra} async></script>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme shop</title>
<style>
  body { margin: 0; font-family: Georgia, serif; background: #f6f1e7; color: #2b2b2b; }
  main { max-width: 720px; margin: 0 auto; padding: 48px 24px; }
  h1 { font-size: 34px; margin: 0 0 12px; }
  .bubble { color: rgb(0, 128, 0); font-size: 13px; }
  ${hostile ? `* { color: red !important; font-size: 40px !important; line-height: 3 !important; font-family: "Comic Sans MS", cursive !important; box-sizing: content-box !important; padding: 9px !important; }
  button { background: yellow !important; width: 300px !important; border-radius: 0 !important; }
  div, section, li, ol, form, textarea { display: block !important; margin: 20px !important; border: 3px dashed blue !important; }
  html { font-size: 30px !important; }` : ''}
</style></head>
<body><main><h1>Acme shop</h1><p>Everything for your kitchen. <a href="#about">About us</a></p>
<p class="bubble" id="host-bubble">A page element named like one of the widget's.</p>
<p style="height: 900px">Products…</p></main>
${embed}
</body></html>`;
}

beforeAll(async () => {
  if (!chromiumFound) return;
  expect(existsSync(join(root, 'dist/web/widget/widget.js')), 'run `npm run build` first (it builds the widget)').toBe(true);
  mkdirSync(SHOTS, { recursive: true });
  srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '40' });
  const kb = await srv.api('/v1/knowledge-bases', { body: { name: 'Shop help' } });
  expect(kb.status).toBe(201);
  const kbId = ((await kb.json()) as { id: string }).id;
  const up = await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title: DOC_TITLE, content: DOC, content_type: 'text/markdown' } });
  expect(up.status).toBe(202);
  const docId = ((await up.json()) as { id: string }).id;
  await waitFor(async () => {
    const doc = (await (await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`)).json()) as { status: string };
    return doc.status === 'processing' ? undefined : doc.status;
  }, 20_000, 'document ready').then((s) => expect(s).toBe('ready'));
  const agent = await createAgent(srv, { name: 'Acme helper', knowledge_base_ids: [kbId], tools: ['search_knowledge', 'handoff_to_human'] });
  pk = await publish(srv, agent);

  host = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(hostPage(req.url ?? '/'));
  });
  await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
  // "localhost" and Parley's "127.0.0.1": another host and another port, so another origin.
  hostUrl = `http://localhost:${(host.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (host ? host.close(r) : r(undefined)));
  await srv?.close();
});

interface Tab {
  context: BrowserContext;
  page: Page;
  problems: string[];
}

/** A fresh browser profile (its own localStorage) with the host page open. */
async function visit(opts: { width?: number; height?: number; query?: string; reducedMotion?: boolean } = {}): Promise<Tab> {
  const context = await browser.newContext({
    viewport: { width: opts.width ?? 1100, height: opts.height ?? 780 },
    ...(opts.reducedMotion ? { reducedMotion: 'reduce' as const } : {}),
  });
  // Shorter than the test's own timeout, so a missing element fails with its locator named.
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  if (process.env.WIDGET_DEBUG) page.on('console', (m) => console.log(`[page] ${m.type()} ${m.text()}`));
  await page.goto(`${hostUrl}/${opts.query ?? ''}`);
  await page.locator('parley-widget .launcher').waitFor();
  return { context, page, problems };
}

async function leave(tab: Tab): Promise<void> {
  expect(tab.problems).toEqual([]);
  await tab.context.close();
}

const panel = (page: Page) => page.getByRole('dialog', { name: 'Acme Support' });

/** Bubbles of `role` (visitor, agent, operator) with their text, in order (the greeting excluded). */
function bubbles(page: Page, role: string): Promise<string[]> {
  return page.locator(`parley-widget li.msg[data-role="${role}"] .bubble`).allTextContents();
}

async function ask(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.keyboard.press('Enter');
}

/** The id and text of the visitor's conversation as Parley stored them. */
async function stored(conversationId: string): Promise<Array<{ id: string; role: string; content: string }>> {
  const r = await srv.api(`/v1/conversations/${conversationId}/messages?limit=100`);
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: Array<{ id: string; role: string; content: string }> }).data;
}

async function conversationOf(page: Page): Promise<{ conversation_id: string; visitor_token: string }> {
  const raw = await page.evaluate((key) => localStorage.getItem(key), `parley.widget.${pk}`);
  expect(raw, 'the widget keeps its conversation in localStorage').not.toBeNull();
  return JSON.parse(raw as string) as { conversation_id: string; visitor_token: string };
}

async function status(conversationId: string): Promise<string> {
  return ((await (await srv.api(`/v1/conversations/${conversationId}`)).json()) as { status: string }).status;
}

const post = async (path: string, body?: unknown) => {
  const r = await srv.api(path, body === undefined ? { method: 'POST' } : { body });
  expect(r.status, `${path}: ${await r.clone().text()}`).toBeLessThan(300);
  return r;
};

/** The text of the newest agent bubble, sampled until it stops streaming: every distinct value seen. */
async function watchStreaming(page: Page): Promise<string[]> {
  const seen: string[] = [];
  const last = page.locator('parley-widget li.msg[data-role="agent"]').last();
  await last.waitFor();
  for (let i = 0; i < 400; i++) {
    const [text, cls] = await Promise.all([last.locator('.bubble').textContent(), last.getAttribute('class')]);
    if (text !== null && text !== '' && seen[seen.length - 1] !== text) seen.push(text);
    if (cls?.includes('done') || cls?.includes('failed')) break;
    await page.waitForTimeout(25);
  }
  return seen;
}

describe.skipIf(!chromiumFound)('the widget in Chromium, on another origin', { timeout: 120_000 }, () => {
  it('answers a question with streamed words and numbered sources; asks for a person, who replies live; resolved, the agent answers again', async () => {
    const tab = await visit();
    const { page } = tab;
    await page.screenshot({ path: join(SHOTS, 'widget-closed.png') });
    await page.getByRole('button', { name: 'Open chat' }).click();
    await panel(page).waitFor();
    await ask(page, 'How long do refunds take?');
    const seen = await watchStreaming(page);
    const { conversation_id: conversationId, visitor_token: token } = await conversationOf(page);
    expect(token).toMatch(/^vt_/);
    const messages = await stored(conversationId);
    expect(messages.map((m) => m.role)).toEqual(['visitor', 'agent']);
    const answer = messages[1]!.content;
    expect(answer).toContain('five business days');
    // Streamed: the text grew through several partial states, each a prefix of the stored answer.
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (const partial of seen.slice(0, -1)) expect(answer.startsWith(partial.replace(/source (\d)/g, '[$1]'))).toBe(true);
    // The final text is the stored one, [n] markers drawn as badges; the sources listed by number.
    expect((await bubbles(page, 'agent'))[0]!.replace(/source (\d+)/g, '[$1]')).toBe(answer);
    const sources = page.locator('parley-widget .sources li');
    expect(await sources.count()).toBeGreaterThanOrEqual(1);
    expect(await sources.first().textContent()).toBe(`1${DOC_TITLE}`);
    await page.screenshot({ path: join(SHOTS, 'widget-answer.png') });

    // The visitor asks for a person.
    await page.getByRole('button', { name: 'Talk to a person' }).click();
    await page.locator('parley-widget .note').filter({ hasText: 'asked a person' }).waitFor();
    expect(await status(conversationId)).toBe('pending_handoff');
    expect(await panel(page).locator('.sub').textContent()).toBe('Waiting for a person to join…');
    expect(await page.getByRole('button', { name: 'Talk to a person' }).count()).toBe(0);

    // An operator takes over and replies: the visitor sees it live, marked as from a person.
    await post(`/v1/conversations/${conversationId}/takeover`);
    const reply = await (await post(`/v1/conversations/${conversationId}/messages`, { content: 'Hi, I am Sam from the team. Let me check your order.' })).json() as { id: string };
    const fromPerson = page.locator(`parley-widget li.msg.operator[data-id="${reply.id}"]`);
    await fromPerson.waitFor();
    expect(await fromPerson.locator('.from').textContent()).toContain('A person from the team');
    expect(await fromPerson.locator('.bubble').textContent()).toBe('Hi, I am Sam from the team. Let me check your order.');
    expect(await panel(page).locator('.sub').textContent()).toBe('You are chatting with our team');
    // Announced to screen readers.
    await page.locator('parley-widget [aria-live="polite"]').filter({ hasText: 'Team member: Hi, I am Sam' }).waitFor();

    // The visitor answers the person: stored, forwarded, no agent reply.
    await ask(page, 'Order 1234, thank you');
    await waitFor(async () => ((await stored(conversationId)).some((m) => m.content === 'Order 1234, thank you') ? true : undefined), 10_000, 'visitor message stored');
    await page.screenshot({ path: join(SHOTS, 'widget-person.png') });
    expect(await bubbles(page, 'agent')).toHaveLength(1);

    // Resolved: the agent answers the next question.
    await post(`/v1/conversations/${conversationId}/resolve`);
    await ask(page, 'Are exchanges shipped the same day?');
    await page.locator('parley-widget li.msg[data-role="agent"]').nth(1).waitFor();
    await watchStreaming(page);
    const after = await stored(conversationId);
    expect(after.at(-1)!.role).toBe('agent');
    expect(after.at(-1)!.content).toContain('same day');
    expect((await bubbles(page, 'agent'))[1]!.replace(/source (\d+)/g, '[$1]')).toBe(after.at(-1)!.content);
    expect(await panel(page).locator('.sub').textContent()).toBe('The assistant answers instantly');
    await leave(tab);
  });

  it('two tabs of one visitor: a question asked in one shows live in the other before its answer, and once in each', async () => {
    const tab = await visit({ query: '?attrs=data-open' });
    const { page, context } = tab;
    await panel(page).waitFor();
    await ask(page, 'Is the return label free?');
    await watchStreaming(page);
    // A second tab of the same browser profile: the same saved conversation, listening.
    const other = await context.newPage();
    other.on('pageerror', (err) => tab.problems.push(`page error (second tab): ${err.message}`));
    await other.goto(`${hostUrl}/?attrs=data-open`);
    await panel(other).waitFor();
    await other.locator('parley-widget li.msg[data-role="agent"]').first().waitFor();
    expect(await bubbles(other, 'visitor')).toEqual(['Is the return label free?']);

    await ask(page, 'Are exchanges shipped the same day?');
    const question = other.locator('parley-widget li.msg[data-role="visitor"]').nth(1);
    await question.waitFor();
    expect(await question.locator('.bubble').textContent()).toBe('Are exchanges shipped the same day?');
    await other.locator('parley-widget li.msg[data-role="agent"]').nth(1).waitFor();
    await Promise.all([watchStreaming(page), watchStreaming(other)]);
    await other.screenshot({ path: join(SHOTS, 'widget-second-tab.png') });
    const { conversation_id: conversationId } = await conversationOf(page);
    const messages = await stored(conversationId);
    expect(messages.map((m) => m.role)).toEqual(['visitor', 'agent', 'visitor', 'agent']);
    for (const p of [page, other]) {
      expect(await bubbles(p, 'visitor')).toEqual(['Is the return label free?', 'Are exchanges shipped the same day?']);
      expect((await bubbles(p, 'agent')).map((t) => t.replace(/source (\d+)/g, '[$1]'))).toEqual([messages[1]!.content, messages[3]!.content]);
      // Each bubble carries its stored id: the live copy and the sender's own are one bubble.
      expect(await p.locator('parley-widget li.msg[data-role="visitor"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-id')))).toEqual([messages[0]!.id, messages[2]!.id]);
    }
    await leave(tab);
  });

  it('shows the same conversation after a reload, and catches up on two operator messages sent while offline, each once', async () => {
    const tab = await visit({ query: '?attrs=data-open' });
    const { page, context } = tab;
    await panel(page).waitFor();
    await ask(page, 'Is the return label free?');
    await watchStreaming(page);
    // Asked in words, the agent hands off itself: its tool run shows as a quiet line.
    await ask(page, 'Can I talk to a person?');
    await watchStreaming(page);
    expect(await page.locator('parley-widget .tool').last().textContent()).toBe('Asked a person to join');
    expect(await panel(page).locator('.sub').textContent()).toBe('Waiting for a person to join…');
    const { conversation_id: conversationId } = await conversationOf(page);
    expect(await status(conversationId)).toBe('pending_handoff');
    await post(`/v1/conversations/${conversationId}/takeover`);
    await post(`/v1/conversations/${conversationId}/messages`, { content: 'Yes, inside the EU it is.' });
    await page.locator('parley-widget li.msg.operator').waitFor();

    // Reload mid-conversation: the history, in order, as stored.
    await page.reload();
    await panel(page).waitFor();
    const history = await stored(conversationId);
    await page.locator('parley-widget li.msg.operator').waitFor();
    const shown = await page.locator('parley-widget li.msg[data-id^="msg_"]').evaluateAll((els: any[]) => els.map((e) => e.getAttribute('data-id')));
    expect(shown).toEqual(history.map((m) => m.id));
    expect(await bubbles(page, 'operator')).toEqual(['Yes, inside the EU it is.']);
    expect(await panel(page).locator('.sub').textContent()).toBe('You are chatting with our team');
    // No question was asked again.
    expect((await stored(conversationId)).length).toBe(history.length);

    // The network drops; the operator sends two messages meanwhile.
    await context.setOffline(true);
    await panel(page).getByRole('status').filter({ hasText: 'Reconnecting' }).waitFor();
    const one = await (await post(`/v1/conversations/${conversationId}/messages`, { content: 'First while you were away.' })).json() as { id: string };
    const two = await (await post(`/v1/conversations/${conversationId}/messages`, { content: 'Second while you were away.' })).json() as { id: string };
    await page.waitForTimeout(1500);
    expect(await bubbles(page, 'operator')).toEqual(['Yes, inside the EU it is.']);
    await page.screenshot({ path: join(SHOTS, 'widget-offline.png') });

    await context.setOffline(false);
    await page.locator(`parley-widget li.msg[data-id="${two.id}"]`).waitFor({ timeout: 20_000 });
    await page.waitForTimeout(1500); // anything doubled would have arrived by now
    expect(await bubbles(page, 'operator')).toEqual(['Yes, inside the EU it is.', 'First while you were away.', 'Second while you were away.']);
    expect(await page.locator(`parley-widget li.msg[data-id="${one.id}"]`).count()).toBe(1);
    expect(await panel(page).getByRole('status').filter({ hasText: 'Reconnecting' }).count()).toBe(0);

    // Live again: a third message arrives without a reload.
    await post(`/v1/conversations/${conversationId}/messages`, { content: 'And one more, live.' });
    await page.locator('parley-widget li.msg.operator').filter({ hasText: 'And one more, live.' }).waitFor();
    expect(await bubbles(page, 'operator')).toHaveLength(4);

    // With the panel closed, a reply still arrives: the launcher counts it until the panel opens.
    await page.keyboard.press('Escape');
    await panel(page).waitFor({ state: 'detached' });
    await post(`/v1/conversations/${conversationId}/messages`, { content: 'Anything else?' });
    const launcher = page.getByRole('button', { name: 'Open chat, 1 new message', exact: true });
    await launcher.waitFor();
    expect(await page.locator('parley-widget .badge').textContent()).toBe('1');
    await page.screenshot({ path: join(SHOTS, 'widget-unread.png') });
    await launcher.click();
    await panel(page).locator('li.msg.operator').filter({ hasText: 'Anything else?' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Open chat', exact: true }).waitFor();
    expect(await page.locator('parley-widget .badge').count()).toBe(0);
    await leave(tab);
  });

  it('a drop while an answer streams: after reconnecting the answer is complete and shown once, and the question is not asked again', async () => {
    const tab = await visit({ query: '?attrs=data-open' });
    const { page, context } = tab;
    await panel(page).waitFor();
    await ask(page, 'How long do refunds take, and is the return label free?');
    // Offline as soon as the first words are on screen.
    await page.locator('parley-widget li.msg[data-role="agent"] .bubble').filter({ hasText: /\w/ }).waitFor();
    await context.setOffline(true);
    const partial = await page.locator('parley-widget li.msg[data-role="agent"] .bubble').textContent();
    await page.waitForTimeout(400);
    await context.setOffline(false);
    const { conversation_id: conversationId } = await conversationOf(page);
    const done = await waitFor(async () => {
      const m = await stored(conversationId);
      return m.length === 2 ? m : undefined;
    }, 20_000, 'the answer stored');
    const answer = done[1]!.content;
    expect(answer.length).toBeGreaterThan(partial!.length);
    await page.locator(`parley-widget li.msg[data-id="${done[1]!.id}"]`).waitFor({ timeout: 20_000 });
    await page.waitForTimeout(1000);
    expect((await bubbles(page, 'agent')).map((t) => t.replace(/source (\d+)/g, '[$1]'))).toEqual([answer]);
    expect(await bubbles(page, 'visitor')).toEqual(['How long do refunds take, and is the return label free?']);
    expect((await stored(conversationId)).map((m) => m.role)).toEqual(['visitor', 'agent']);
    await leave(tab);
  });

  it('a conversation the team closed: the next message says so, and trying again starts a new conversation', async () => {
    const tab = await visit({ query: '?attrs=data-open' });
    const { page } = tab;
    await panel(page).waitFor();
    await ask(page, 'Is the return label free?');
    await watchStreaming(page);
    const first = await conversationOf(page);
    await post(`/v1/conversations/${first.conversation_id}/close`);
    await ask(page, 'And exchanges?');
    const failed = panel(page).getByRole('alert').filter({ hasText: 'This conversation has ended.' });
    await failed.waitFor();
    expect(await page.evaluate((key) => localStorage.getItem(key), `parley.widget.${pk}`)).toBeNull();
    await failed.getByRole('button', { name: 'Try again' }).click();
    await page.locator('parley-widget li.msg[data-role="agent"]').nth(1).waitFor();
    await watchStreaming(page);
    const second = await conversationOf(page);
    expect(second.conversation_id).not.toBe(first.conversation_id);
    expect((await stored(second.conversation_id)).map((m) => [m.role, m.role === 'visitor' ? m.content : ''])).toEqual([['visitor', 'And exchanges?'], ['agent', '']]);
    expect(await bubbles(page, 'visitor')).toEqual(['Is the return label free?', 'And exchanges?']);
    await leave(tab);
  });

  it('works with the keyboard alone: open, send, close; focus goes to the message box and back to the launcher', async () => {
    const tab = await visit({ reducedMotion: true });
    const { page } = tab;
    const focused = () => page.evaluate(() => {
      const hostEl = document.querySelector('parley-widget');
      const inner = document.activeElement === hostEl ? hostEl.shadowRoot.activeElement : document.activeElement;
      return inner === null ? '' : (inner.getAttribute('aria-label') ?? inner.id ?? inner.tagName);
    });
    // Tab from the top of the page: the page's link, then the launcher.
    for (let i = 0; i < 5 && (await focused()) !== 'Open chat'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('Open chat');
    await page.keyboard.press('Enter');
    await panel(page).waitFor();
    expect(await focused()).toBe('pw-input');
    // Reduced motion: the panel does not animate in.
    expect(await panel(page).evaluate((el: any) => getComputedStyle(el).animationName)).toBe('none');
    await page.keyboard.type('Do you ship exchanges the same day?');
    await page.keyboard.press('Enter');
    await watchStreaming(page);
    expect((await bubbles(page, 'agent'))[0]).toContain('same day');
    expect(await bubbles(page, 'visitor')).toEqual(['Do you ship exchanges the same day?']);
    // Every control has a name.
    for (const name of ['Close chat', 'Talk to a person', 'Send message']) expect(await panel(page).getByRole('button', { name }).count()).toBe(1);
    await page.keyboard.press('Escape');
    await panel(page).waitFor({ state: 'detached' });
    expect(await focused()).toBe('Open chat');
    expect(await page.getByRole('button', { name: 'Open chat' }).getAttribute('aria-expanded')).toBe('false');
    await leave(tab);
  });

  it('is not changed by a hostile page stylesheet, and its own styles do not leak into the page', async () => {
    const probe = async (page: Page) => {
      await page.getByRole('button', { name: 'Open chat' }).click();
      await panel(page).waitFor();
      return page.evaluate(() => {
        const root = document.querySelector('parley-widget').shadowRoot;
        const pick = (sel: string) => {
          const s = getComputedStyle(root.querySelector(sel));
          return { color: s.color, fontSize: s.fontSize, fontFamily: s.fontFamily, lineHeight: s.lineHeight, padding: s.padding, margin: s.margin, width: s.width, border: s.borderTopStyle, display: s.display };
        };
        const rect = (sel: string) => { const r = root.querySelector(sel).getBoundingClientRect(); return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)]; };
        return {
          title: pick('h2'), bubble: pick('.greeting .bubble'), launcher: pick('.launcher'), input: pick('textarea'), send: pick('.send'),
          panelRect: rect('.panel'), launcherRect: rect('.launcher'), inputRect: rect('textarea'),
        };
      });
    };
    const calm = await visit({ reducedMotion: true });
    const expected = await probe(calm.page);
    await calm.page.screenshot({ path: join(SHOTS, 'widget-open-calm.png') });
    // The page's own `.bubble` keeps the page's style: the widget's `.bubble` rule does not reach it.
    expect(await calm.page.evaluate(() => getComputedStyle(document.getElementById('host-bubble')).color)).toBe('rgb(0, 128, 0)');
    expect(await calm.page.evaluate(() => getComputedStyle(document.getElementById('host-bubble')).fontSize)).toBe('13px');
    await leave(calm);

    const hostile = await visit({ query: '?hostile', reducedMotion: true });
    // The hostile rules do apply to the page itself.
    expect(await hostile.page.evaluate(() => getComputedStyle(document.querySelector('h1')).color)).toBe('rgb(255, 0, 0)');
    const got = await probe(hostile.page);
    await hostile.page.screenshot({ path: join(SHOTS, 'widget-open-hostile.png') });
    expect(got).toEqual(expected);
    expect(got.bubble.color).not.toBe('rgb(255, 0, 0)');
    expect(got.bubble.fontSize).toBe('14px');
    await leave(hostile);
  });

  it('fills a 360 px wide screen and takes the accent color of data-color', async () => {
    const tab = await visit({ width: 360, height: 720, query: '?attrs=data-color%3D%22%23e8590c%22' });
    const { page } = tab;
    await page.getByRole('button', { name: 'Open chat' }).click();
    await panel(page).waitFor();
    await ask(page, 'How long do refunds take?');
    await watchStreaming(page);
    const box = await page.locator('parley-widget .panel').boundingBox();
    expect(box).toEqual({ x: 0, y: 0, width: 360, height: 720 });
    // Nothing scrolls sideways, and the send button stays on screen.
    const send = await page.locator('parley-widget .send').boundingBox();
    expect(send!.x + send!.width).toBeLessThanOrEqual(360);
    expect(await page.locator('parley-widget .panel').evaluate((el: any) => el.scrollWidth <= el.clientWidth)).toBe(true);
    expect(await page.locator('parley-widget li.msg.visitor .bubble').evaluate((el: any) => getComputedStyle(el).backgroundColor)).toBe('rgb(232, 89, 12)');
    await page.screenshot({ path: join(SHOTS, 'widget-360.png') });
    await leave(tab);
  });
});
