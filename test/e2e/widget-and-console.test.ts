/**
 * Both browser sides at once (issue "In the browser"): a visitor in the chat widget, embedded in a page of
 * another origin, and an operator in the console at /dashboard, each in its own Chromium context, against
 * one real Parley (uWS on a free port, SQLite on disk, the builtin model answering from a knowledge base).
 *
 * The flow: the visitor asks and sees a streamed, cited answer; asks for a person; the request shows in the
 * operator's inbox at once; the operator takes over and replies; the reply shows in the widget live,
 * marked as from a person; the visitor's answer reaches the console; the operator resolves, and the agent
 * answers the visitor's next question in both windows. Screenshots go to test-results/.
 *
 * Skips, saying so, only when /usr/bin/chromium is missing (.ci/run installs it).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium } from '../helpers/browser.js';
import { createAgent, publish } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';

declare const localStorage: any;

const chromiumFound = hasChromium("the widget-and-console browser tests");

const root = resolve(import.meta.dirname, '../..');
const SHOTS = join(root, 'test-results');

const DOC = [
  '# Refunds and returns',
  '',
  'Refunds are paid back to the original card within five business days after we receive the parcel.',
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

beforeAll(async () => {
  if (!chromiumFound) return;
  expect(existsSync(join(root, 'dist/web/widget/widget.js')), 'run `npm run build` first').toBe(true);
  expect(existsSync(join(root, 'dist/web/dashboard/index.html')), 'run `npm run build` first').toBe(true);
  mkdirSync(SHOTS, { recursive: true });
  srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '40' });
  const kb = (await (await srv.api('/v1/knowledge-bases', { body: { name: 'Shop help' } })).json()) as { id: string };
  const up = await srv.api(`/v1/knowledge-bases/${kb.id}/documents`, { body: { title: 'Refunds and returns', content: DOC, content_type: 'text/markdown' } });
  expect(up.status).toBe(202);
  const docId = ((await up.json()) as { id: string }).id;
  await waitFor(async () => {
    const d = (await (await srv.api(`/v1/knowledge-bases/${kb.id}/documents/${docId}`)).json()) as { status: string };
    return d.status === 'ready' ? true : undefined;
  }, 20_000, 'document ready');
  const agent = await createAgent(srv, { name: 'Acme helper', knowledge_base_ids: [kb.id], tools: ['search_knowledge', 'handoff_to_human'] });
  pk = await publish(srv, agent);
  host = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme shop</title></head>
<body><h1>Acme shop</h1><script src="${srv.url}/widget.js" data-public-key="${pk}" data-title="Acme Support" async></script></body></html>`);
  });
  await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
  // Parley is http://127.0.0.1:<port>; the shop is http://localhost:<other port>: another origin.
  hostUrl = `http://localhost:${(host.address() as AddressInfo).port}/`;
  browser = await launchChromium();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (host ? host.close(r) : r(undefined)));
  await srv?.close();
});

/** The newest agent bubble of the widget, sampled until it is done: every distinct text seen. */
async function widgetAnswer(page: Page, nth: number): Promise<string[]> {
  const bubble = page.locator('parley-widget li.msg[data-role="agent"]').nth(nth);
  await bubble.waitFor();
  const seen: string[] = [];
  for (let i = 0; i < 600; i++) {
    const [text, cls] = await Promise.all([bubble.locator('.bubble').textContent(), bubble.getAttribute('class')]);
    if (text && seen[seen.length - 1] !== text) seen.push(text);
    if (cls?.includes('done') || cls?.includes('failed')) break;
    await page.waitForTimeout(25);
  }
  return seen;
}

async function ask(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.keyboard.press('Enter');
}

describe.skipIf(!chromiumFound)('a visitor in the widget and an operator in the console', { timeout: 180_000 }, () => {
  it('streamed cited answer, handoff seen in the inbox, takeover and a live reply, resolve, and the agent answers again', async () => {
    const visitorContext = await browser.newContext({ viewport: { width: 1000, height: 760 } });
    const operatorContext = await browser.newContext({ baseURL: srv.url, viewport: { width: 1280, height: 800 } });
    visitorContext.setDefaultTimeout(20_000);
    operatorContext.setDefaultTimeout(20_000);
    const problems: string[] = [];
    const visitor = await visitorContext.newPage();
    const operator = await operatorContext.newPage();
    for (const p of [visitor, operator]) p.on('pageerror', (err) => problems.push(`page error: ${err.message}`));

    // The operator signs in and waits on the inbox.
    const person = await srv.addPerson({ role: 'operator' });
    await operator.goto('/dashboard');
    await operator.getByLabel('E-mail').fill(person.email);
    await operator.getByLabel('Password').fill(person.password);
    await operator.getByRole('button', { name: 'Sign in' }).click();
    await operator.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
    await operator.locator('.inbox-head [data-live="live"]').waitFor();

    // The visitor asks in the widget: a streamed answer with a numbered source.
    await visitor.goto(hostUrl);
    await visitor.getByRole('button', { name: 'Open chat' }).click();
    await ask(visitor, 'How long do refunds take?');
    const seen = await widgetAnswer(visitor, 0);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.at(-1)).toContain('five business days');
    expect(await visitor.locator('parley-widget .sources li').first().textContent()).toBe('1Refunds and returns');
    const saved = JSON.parse(await visitor.evaluate((key) => localStorage.getItem(key), `parley.widget.${pk}`) as string) as { conversation_id: string };
    const conversationId = saved.conversation_id;
    const row = operator.locator(`.conv-item[data-conversation="${conversationId}"]`);
    await row.waitFor();

    // The visitor asks for a person: the operator's inbox shows it waiting, at once.
    await visitor.getByRole('button', { name: 'Talk to a person' }).click();
    await row.locator('[data-status="pending_handoff"]').waitFor();
    await operator.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: /^Inbox\W+1 waiting for a person$/ }).waitFor();

    // The operator opens it, takes over and replies.
    await row.click();
    const view = operator.getByRole('region', { name: `Visitor ${conversationId.slice(-4).toUpperCase()}` });
    await view.locator('[data-live="live"]').waitFor();
    await view.getByRole('button', { name: 'Take over' }).click();
    await view.locator('.conv-sub [data-status="handed_off"]').waitFor();
    await view.getByLabel(/^Reply to /).fill('Hi, I am Sam from the team. Which order is it?');
    await view.getByRole('button', { name: 'Send' }).click();

    // The visitor sees it live, marked as from a person; the visitor's answer reaches the console.
    const fromPerson = visitor.locator('parley-widget li.msg.operator').last();
    await fromPerson.waitFor();
    expect(await fromPerson.locator('.bubble').textContent()).toBe('Hi, I am Sam from the team. Which order is it?');
    expect(await fromPerson.locator('.from').textContent()).toContain('A person from the team');
    await ask(visitor, 'Order 1234');
    await view.getByRole('log').locator('.msg-visitor').filter({ hasText: 'Order 1234' }).waitFor();
    await visitor.screenshot({ path: join(SHOTS, 'both-widget-person.png') });
    await operator.screenshot({ path: join(SHOTS, 'both-console-person.png') });
    // No agent answer while a person has the conversation.
    expect(await visitor.locator('parley-widget li.msg[data-role="agent"]').count()).toBe(1);

    // Resolve: the agent answers the next question, in the widget and in the console.
    const header = visitor.getByRole('dialog', { name: 'Acme Support' }).locator('.sub');
    expect(await header.textContent()).toBe('You are chatting with our team');
    await view.getByRole('button', { name: 'Resolve' }).click();
    await view.locator('.conv-sub [data-status="active"]').waitFor();
    // The widget learns it from the listen-only socket's status frame, before anyone writes.
    await header.filter({ hasText: 'The assistant answers instantly' }).waitFor();
    await ask(visitor, 'Are exchanges shipped the same day?');
    const second = await widgetAnswer(visitor, 1);
    expect(second.at(-1)).toContain('same day');
    const stored = ((await (await srv.api(`/v1/conversations/${conversationId}/messages?limit=100`)).json()) as { data: Array<{ role: string; content: string }> }).data;
    expect(stored.map((m) => m.role)).toEqual(['visitor', 'agent', 'operator', 'visitor', 'visitor', 'agent']);
    await view.getByRole('log').locator('.msg-agent .msg-body').filter({ hasText: 'same day' }).waitFor();
    expect(await view.getByRole('log').locator('.msg-agent .msg-body').last().textContent()).toBe(stored.at(-1)!.content);
    await operator.screenshot({ path: join(SHOTS, 'both-console-resolved.png') });

    expect(problems).toEqual([]);
    await visitorContext.close();
    await operatorContext.close();
  });
});
