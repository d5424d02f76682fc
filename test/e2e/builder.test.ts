/**
 * The dashboard's builder pages (issue 40) in a real browser (Debian's Chromium, driven by playwright-core)
 * against a real Parley with the builtin model: a new agent, a new knowledge base attached to it, a
 * Markdown file and a PDF uploaded with the file input, both watched to Ready without a reload, a passage
 * found with Test a search, a playground question answered from the new document with its citation, the
 * turns counted on Usage (and the playground conversation kept out of the inbox), a server-side
 * validation_failed message beside its field, a failed upload with its reason, the keyboard alone, a
 * 360 px screen, and the axe-core accessibility check on each page. Screenshots of each page go to
 * test-results/ (docs/images/ takes them from there).
 *
 * The tests skip, saying so, only when /usr/bin/chromium is missing.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeTab, hasChromium, launchChromium, openTab, submitDashboardSignIn, type Tab } from '../helpers/browser.js';
import { startTestServer, type TestPerson, type TestServer } from '../helpers/server.js';

// Browser globals used inside page.evaluate() (they run in Chromium; the server's tsconfig has no DOM lib).
declare const document: any;
declare const axe: any;

const chromiumFound = hasChromium("the builder pages' browser tests");
const root = resolve(import.meta.dirname, '../..');
const SHOTS = join(root, 'test-results');
const AXE_SOURCE = readFileSync(join(root, 'node_modules/axe-core/axe.min.js'), 'utf8');

const MARKDOWN = [
  '# Harbour office',
  '',
  'Opening hours and the tide desk of the harbour office.',
  '',
  '## Tide desk',
  '',
  'The tide desk of the harbour office opens at quarter past seven on Tuesdays, and the kayak permits are stamped there.',
  '',
].join('\n');
const PDF_SENTENCE = 'The lighthouse lantern is polished with walnut oil every ninth morning.';

/** A one-page PDF holding `sentence` (pdf-lib; Parley extracts its text with pdf.js). */
async function pdfWith(sentence: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage([595, 842]).drawText(sentence, { x: 50, y: 780, size: 11, font });
  return Buffer.from(await doc.save());
}

let srv: TestServer;
let browser: Browser;
let owner: TestPerson;

beforeAll(async () => {
  if (!chromiumFound) return;
  expect(existsSync(join(root, 'dist/web/dashboard/index.html')), 'run `npm run build` first (it builds the dashboard)').toBe(true);
  mkdirSync(SHOTS, { recursive: true });
  srv = await startTestServer({ PARLEY_INGEST_WORKERS: '1' });
  browser = await launchChromium();
  owner = await srv.addPerson({ role: 'owner' });
});
afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

const heading = (page: Page, name: string) => page.getByRole('heading', { name, exact: true, level: 1 }).waitFor();
const nav = (page: Page) => page.getByRole('navigation', { name: 'Sections' });

async function signIn(page: Page): Promise<void> {
  await submitDashboardSignIn(page, owner);
  await heading(page, 'Inbox');
}

/**
 * The axe-core violations of the page as it is (WCAG 2.1 A and AA rules), as "rule: target" lines. axe is
 * evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
 */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
  });
  return found as string[];
}

/** The row of the documents table whose title is `title`. */
const docRow = (page: Page, title: string) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: title, exact: true }) });

describe.skipIf(!chromiumFound)('builder pages', () => {
  it('builds an agent on its own documents and talks to it without leaving the browser', async () => {
    const tab = await openTab(browser, srv.url);
    const { page } = tab;
    await signIn(page);

    // Agents: New agent -> the editor. A name the server refuses (spaces only) shows its message beside the field.
    await nav(page).getByRole('link', { name: 'Agents' }).click();
    await heading(page, 'Agents');
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'New agent' }).click();
    await heading(page, 'New agent');
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('   ');
    await page.getByRole('button', { name: 'Save' }).click();
    const nameBox = page.getByRole('textbox', { name: 'Name', exact: true });
    await expect.poll(() => nameBox.getAttribute('aria-invalid')).toBe('true');
    const described = await nameBox.getAttribute('aria-describedby');
    expect(described).toBeTruthy();
    const message = await page.locator(`#${described!.split(' ')[0]!}`).textContent();
    expect(message).toMatch(/too small|at least|>=1/i);

    await nameBox.fill('Harbour guide');
    await page.getByRole('textbox', { name: 'Description' }).fill('Answers questions about the harbour.');
    const instructions = page.getByRole('textbox', { name: 'Instructions' });
    await instructions.fill('Answer from the harbour documents and cite them.');
    await expect.poll(async () => page.getByText('48 / 20,000 characters').count()).toBe(1);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: '“Harbour guide” is created' }).waitFor();
    await heading(page, 'Harbour guide');
    const agentId = /agents\/(agt_[0-9A-Za-z]+)$/.exec(page.url())?.[1];
    expect(agentId).toBeDefined();
    expect(await axeViolations(page)).toEqual([]);

    // Knowledge: a new knowledge base, from the dialog.
    await nav(page).getByRole('link', { name: 'Knowledge' }).click();
    await heading(page, 'Knowledge bases');
    await page.getByRole('button', { name: 'New knowledge base' }).click();
    const dialog = page.getByRole('dialog', { name: 'New knowledge base' });
    await dialog.getByRole('textbox', { name: 'Name' }).fill('Harbour notes');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await heading(page, 'Harbour notes');

    // Two files at once through the file input; both become Ready with no reload.
    await page.getByLabel('Upload documents').setInputFiles([
      { name: 'Harbour office.md', mimeType: '', buffer: Buffer.from(MARKDOWN) },
      { name: 'Lighthouse care.pdf', mimeType: 'application/pdf', buffer: await pdfWith(PDF_SENTENCE) },
    ]);
    const uploads = page.getByRole('list', { name: 'Uploads' });
    await uploads.getByText('Uploaded').nth(1).waitFor();
    expect(await uploads.getByRole('progressbar').count()).toBe(2);
    const navigations: string[] = [];
    page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations.push(f.url()); });
    for (const [title, type] of [['Harbour office', 'Markdown'], ['Lighthouse care', 'PDF']] as const) {
      const row = docRow(page, title);
      await row.getByText('Ready', { exact: true }).waitFor({ timeout: 20_000 });
      expect(await row.getByRole('cell').nth(0).textContent()).toBe(type);
    }
    expect(navigations).toEqual([]);

    // Test a search: the passage of the PDF, with its title and page.
    await page.getByRole('textbox', { name: 'Test a search' }).fill('lighthouse lantern walnut oil');
    await page.getByRole('button', { name: 'Search' }).click();
    const passages = page.getByRole('list', { name: 'Passages found' });
    const first = passages.getByRole('listitem').first();
    await first.waitFor();
    expect(await first.textContent()).toContain('Lighthouse care');
    expect(await first.textContent()).toContain('page 1');
    expect(await first.textContent()).toContain('walnut oil every ninth morning');
    expect(await first.textContent()).toMatch(/score \d/);
    await page.screenshot({ path: join(SHOTS, 'builder-knowledge-base.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);

    // Back to the agent: attach the knowledge base (a checkbox named by it), save, ask the playground.
    await nav(page).getByRole('link', { name: 'Agents' }).click();
    await heading(page, 'Agents');
    const agentRow = page.getByRole('row').filter({ hasText: 'Harbour guide' });
    await agentRow.getByRole('link', { name: 'Edit' }).click();
    await heading(page, 'Harbour guide');
    await page.getByRole('checkbox', { name: /^Harbour notes/ }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: '“Harbour guide” is saved.' }).waitFor();

    await page.getByRole('textbox', { name: 'Message the agent' }).fill('When does the tide desk of the harbour office open?');
    await page.getByRole('button', { name: 'Send' }).click();
    const log = page.getByRole('list', { name: 'Playground conversation' });
    await log.locator('dl.pg-usage').waitFor({ timeout: 20_000 });
    const reply = log.getByRole('listitem').first();
    expect(await reply.textContent()).toContain('quarter past seven');
    const sources = reply.getByRole('list', { name: 'Sources' });
    expect(await sources.textContent()).toContain('Harbour office');
    expect(await sources.textContent()).toContain('Tide desk');
    expect(await reply.locator('dl').textContent()).toMatch(/Input\s*[\d,]+ tokens.*Output\s*[\d,]+ tokens/s);
    expect(await axeViolations(page)).toEqual([]);
    await page.evaluate(() => document.scrollingElement.scrollTo(0, 0));
    await page.screenshot({ path: join(SHOTS, 'builder-agent-editor.png') });

    // The playground conversation is marked, and the inbox leaves it out.
    const conversations = await (await srv.api(`/v1/conversations?agent_id=${agentId}`)).json() as { data: Array<{ id: string; metadata: Record<string, string> }> };
    expect(conversations.data).toHaveLength(1);
    expect(conversations.data[0]!.metadata).toEqual({ source: 'playground' });
    // A conversation from elsewhere (no source) shows in the inbox; the playground's does not.
    expect((await srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'Hello from the website' } })).status).toBe(200);
    await nav(page).getByRole('link', { name: /^Inbox/ }).click();
    await heading(page, 'Inbox');
    await page.locator('.conv-item').filter({ hasText: 'Harbour guide' }).first().waitFor();
    await page.waitForTimeout(300);
    expect(await page.locator('.conv-item').filter({ hasText: 'Harbour guide' }).count()).toBe(1);

    // Usage: the turn is counted for the agent, in the chart's table.
    await nav(page).getByRole('link', { name: 'Usage' }).click();
    await heading(page, 'Usage');
    await page.getByRole('img', { name: 'Tokens per day' }).waitFor();
    await page.getByRole('combobox', { name: 'Agent' }).selectOption({ label: 'Harbour guide' });
    const table = page.getByRole('table', { name: /Tokens per day, Harbour guide/ });
    const today = table.getByRole('row').nth(1);
    const cells = await today.getByRole('cell').allTextContents();
    const usage = await (await srv.api(`/v1/usage?agent_id=${agentId}`)).json() as { data: Array<{ input_tokens: number; output_tokens: number; turns: number }> };
    expect(usage.data).toHaveLength(1);
    expect(usage.data[0]!.turns).toBe(2);
    expect(cells).toEqual([
      usage.data[0]!.input_tokens.toLocaleString('en-US'), usage.data[0]!.output_tokens.toLocaleString('en-US'),
      (usage.data[0]!.input_tokens + usage.data[0]!.output_tokens).toLocaleString('en-US'), '2',
    ]);
    expect(await page.locator('.chart svg .ct-bar').count()).toBeGreaterThan(0);

    // A threshold, saved, with its next reset: the first of the next UTC month, within a month from now.
    await page.getByRole('button', { name: 'Add threshold' }).click();
    await page.getByRole('spinbutton', { name: 'Threshold 1: tokens' }).fill('50000');
    await page.getByRole('button', { name: 'Save thresholds' }).click();
    await page.getByRole('status').filter({ hasText: 'Thresholds saved.' }).waitFor();
    expect(await (await srv.api('/v1/usage/thresholds')).json()).toEqual({ thresholds: [{ metric: 'total_tokens', value: 50000, period: 'month' }] });
    const reset = await page.locator('.threshold time').getAttribute('datetime');
    expect(reset).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);
    const untilReset = Date.parse(reset!) - Date.now();
    expect(untilReset).toBeGreaterThan(0);
    expect(untilReset).toBeLessThanOrEqual(31 * 86_400_000);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'builder-usage.png'), fullPage: true });

    await nav(page).getByRole('link', { name: 'Knowledge' }).click();
    await heading(page, 'Knowledge bases');
    const kbRow = page.getByRole('row').filter({ hasText: 'Harbour notes' });
    expect(await kbRow.getByRole('cell').nth(0).textContent()).toBe('2');
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'builder-knowledge.png'), fullPage: true });
    await closeTab(tab);
  }, 120_000);

  it('a failed upload shows its reason: a refused type at once, a broken PDF as Failed in the table', async () => {
    const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'Broken things' } })).json() as { id: string };
    const tab = await openTab(browser, srv.url);
    const { page } = tab;
    await signIn(page);
    await page.goto(`/dashboard/knowledge/${kb.id}`);
    await heading(page, 'Broken things');
    await page.getByLabel('Upload documents').setInputFiles([
      { name: 'prices.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') },
      { name: 'Torn.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.7\nthis is not a PDF body\n%%EOF\n') },
    ]);
    const refused = page.getByRole('list', { name: 'Uploads' }).getByRole('listitem').filter({ hasText: 'prices.csv' });
    await refused.getByText(/^Failed: Content-Type must be one of/).waitFor();
    const row = docRow(page, 'Torn');
    await row.getByText('Failed', { exact: true }).waitFor({ timeout: 20_000 });
    const reason = await row.locator('.doc-error').textContent();
    const stored = await (await srv.api(`/v1/knowledge-bases/${kb.id}/documents`)).json() as { data: Array<{ error: string }> };
    expect(reason).toBe(stored.data[0]!.error);
    expect(reason!.length).toBeGreaterThan(0);

    // Deleting the document asks first; Cancel keeps it, Delete removes it.
    await row.getByRole('button', { name: 'Delete Torn' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete “Torn”?' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await docRow(page, 'Torn').count()).toBe(1);
    await row.getByRole('button', { name: 'Delete Torn' }).click();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No documents yet.').waitFor();
    await closeTab(tab);
  }, 60_000);

  it('with the keyboard alone: from the navigation to a new knowledge base through its dialog, the focus on the new page title', async () => {
    const tab = await openTab(browser, srv.url);
    const { page } = tab;
    await signIn(page);
    await nav(page).getByRole('link', { name: 'Knowledge' }).focus();
    await page.keyboard.press('Enter');
    await heading(page, 'Knowledge bases');
    // Tab from the page title reaches the New knowledge base button.
    for (let i = 0; i < 5 && !(await page.evaluate(() => document.activeElement?.textContent === 'New knowledge base')); i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'New knowledge base' }).waitFor();
    await page.keyboard.type('Typed by keyboard');
    await page.keyboard.press('Enter');
    await heading(page, 'Typed by keyboard');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('page-title');
    await closeTab(tab);
  }, 60_000);

  it('fits a 360 px screen on every builder page', async () => {
    const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'Narrow' } })).json() as { id: string };
    const agent = await (await srv.api('/v1/agents', { body: { name: 'Narrow agent', knowledge_base_ids: [kb.id] } })).json() as { id: string };
    const tab = await openTab(browser, srv.url, { width: 360, height: 780 });
    const { page } = tab;
    await signIn(page);
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    for (const [path, title] of [['agents', 'Agents'], [`agents/${agent.id}`, 'Narrow agent'], ['knowledge', 'Knowledge bases'], [`knowledge/${kb.id}`, 'Narrow'], ['usage', 'Usage']] as const) {
      await page.goto(`/dashboard/${path}`);
      await heading(page, title);
      await page.waitForTimeout(200);
      expect(await overflow(), path).toBe(0);
    }
    await page.screenshot({ path: join(SHOTS, 'builder-usage-360.png'), fullPage: true });
    await closeTab(tab);
  }, 60_000);
});
