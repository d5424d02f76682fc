/**
 * The docs tell the truth (issue 38): the README's and docs/configuration.md's configuration tables list
 * exactly the variables the configuration reads, and no page calls "planned" a feature the code has.
 * Like the error-catalogue test, each side is read from its source: the tables from the Markdown, the
 * variables from src/config/config.ts, the features from the route table and the files of the project.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../../src/config/config.js';
import { apiDocument } from '../../src/transport/http/routes/index.js';

const root = resolve(import.meta.dirname, '../..');
const read = (rel: string) => readFileSync(join(root, rel), 'utf8');

/** The `PARLEY_...` names in the first column of the table under the heading `heading` of `markdown`. */
function tableVariables(markdown: string, heading: RegExp): string[] {
  const start = markdown.search(heading);
  expect(start, `heading ${heading}`).toBeGreaterThanOrEqual(0);
  const rest = markdown.slice(start).split('\n').slice(1);
  const end = rest.findIndex((l) => /^#{1,3} /.test(l));
  const section = (end === -1 ? rest : rest.slice(0, end)).join('\n');
  return [...section.matchAll(/^\| `(PARLEY_[A-Z0-9_<>]+)` \|/gm)].map((m) => m[1]!);
}

describe('configuration tables', () => {
  it('the README lists every variable the configuration reads, once, and nothing else', () => {
    const listed = tableVariables(read('README.md'), /^## Configuration$/m);
    expect(new Set(listed).size, 'a variable listed twice').toBe(listed.length);
    expect([...listed].sort()).toEqual([...CONFIG_VARIABLES].sort());
  });

  it('docs/configuration.md lists the same variables', () => {
    const listed = tableVariables(read('docs/configuration.md'), /^## All configuration variables$/m);
    expect(new Set(listed).size, 'a variable listed twice').toBe(listed.length);
    expect([...listed].sort()).toEqual([...CONFIG_VARIABLES].sort());
  });

  it('the list of variables comes from the schema: a few known ones, and the tool-secret prefix', () => {
    for (const v of ['PARLEY_PORT', 'PARLEY_WIDGET_DIR', 'PARLEY_TOOLS_ALLOW_PRIVATE', 'PARLEY_TLS_CERT_FILE', 'PARLEY_TRUSTED_PROXIES', 'PARLEY_RETENTION_DAYS']) {
      expect(CONFIG_VARIABLES).toContain(v);
    }
    expect(CONFIG_VARIABLES).toContain('PARLEY_TOOL_SECRET_<NAME>');
  });
});

/** The paths and methods of the API, from the OpenAPI document the routes build. */
const api = apiDocument() as { paths: Record<string, Record<string, unknown>> };
const hasRoute = (method: string, path: string) => api.paths[path]?.[method] !== undefined;

/**
 * Features the code has, each with the words that name it in prose and the evidence that it exists. A
 * sentence that calls something planned must name none of them.
 */
const FEATURES: Array<{ name: string; words: RegExp; exists: () => boolean }> = [
  { name: 'the chat widget', words: /\b(chat )?widget\b/i, exists: () => existsSync(join(root, 'src/web/widget/main.tsx')) },
  { name: 'usage reports and thresholds', words: /\busage (reports?|thresholds?|totals?)\b/i, exists: () => hasRoute('get', '/v1/usage') && hasRoute('put', '/v1/usage/thresholds') },
  { name: 'webhooks', words: /\bwebhooks?\b/i, exists: () => hasRoute('post', '/v1/webhooks') },
  { name: 'the dashboard', words: /\b(dashboard|operator console)\b/i, exists: () => existsSync(join(root, 'src/web/dashboard/app.tsx')) },
  { name: 'TLS', words: /\b(TLS|HTTPS|WSS)\b/, exists: () => CONFIG_VARIABLES.includes('PARLEY_TLS_CERT_FILE') },
  { name: 'client addresses behind proxies', words: /\b(trusted prox(y|ies)|X-Forwarded-For|Forwarded header)\b/i, exists: () => CONFIG_VARIABLES.includes('PARLEY_TRUSTED_PROXIES') },
  { name: 'erasure and retention', words: /\b(eras(e|ed|ure)|retention)\b/i, exists: () => hasRoute('delete', '/v1/conversations/{conversation_id}') && hasRoute('patch', '/v1/organization') },
  { name: 'embeddings', words: /\bembeddings\b/i, exists: () => CONFIG_VARIABLES.includes('PARLEY_EMBEDDINGS_MODEL') },
  { name: 'several processes on one store', words: /\bseveral (Parley )?(processes|instances)\b/i, exists: () => CONFIG_VARIABLES.includes('PARLEY_INTERNAL_PORT') },
  { name: 'handoff to people', words: /\bhandoff\b/i, exists: () => hasRoute('post', '/v1/conversations/{conversation_id}/handoff') },
];

/** Every sentence of the README and docs/*.md that says something is planned, with its file. */
function plannedSentences(): Array<{ file: string; sentence: string }> {
  const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const out: Array<{ file: string; sentence: string }> = [];
  for (const file of files) {
    const text = read(file).replace(/```[\s\S]*?```/g, '');
    for (const sentence of text.split(/(?<=[.!?])\s+|\n\n+|\n(?=#|\||- )/)) {
      if (/\b(planned|not (yet )?available( yet)?|coming soon|will be added)\b/i.test(sentence)) out.push({ file, sentence: sentence.trim() });
    }
  }
  return out;
}

describe('no "planned" claim about what exists', () => {
  it('every feature of the list exists in the code (so the check below checks something)', () => {
    for (const f of FEATURES) expect(f.exists(), f.name).toBe(true);
  });

  it('no sentence of the README or docs/ calls an existing feature planned or not available', () => {
    const found = plannedSentences();
    expect(found.length, 'the roadmap still names what is planned').toBeGreaterThan(0);
    const wrong = found.flatMap(({ file, sentence }) => FEATURES.filter((f) => f.exists() && f.words.test(sentence)).map((f) => `${file}: "${sentence}" calls ${f.name} planned`));
    expect(wrong).toEqual([]);
  });

  it('catches the claims this issue found (the check would fail on them)', () => {
    const claims = [
      'Usage reports per agent and per day, and usage thresholds that trigger a webhook, are planned and not available yet.',
      'A public chat widget for web pages, which talks to one published agent without an API key, is planned; see the Roadmap.',
    ];
    for (const c of claims) expect(FEATURES.some((f) => f.exists() && f.words.test(c)), c).toBe(true);
  });

  it('the README ends no sentence on a dash', () => {
    expect(read('README.md')).not.toMatch(/—\s*\n(?!\|)/);
  });
});
