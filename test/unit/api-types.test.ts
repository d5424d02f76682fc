/**
 * src/web/api-types.ts (the dashboard's and the widget's API types) is generated from the OpenAPI
 * document of the routes; this fails when a route or schema changed and nobody ran `npm run gen:api`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_TYPES_FILE, renderApiTypes } from '../../scripts/api-types.mjs';
import { apiDocument } from '../../src/transport/http/routes/index.js';

describe('generated API types (src/web/api-types.ts)', () => {
  it('match the OpenAPI document of the current routes: run `npm run gen:api` when this fails', async () => {
    const expected = await renderApiTypes(apiDocument());
    const committed = readFileSync(API_TYPES_FILE, 'utf8');
    // One line on failure rather than a 6,000-line diff.
    expect(committed === expected, 'src/web/api-types.ts is stale: run `npm run gen:api` and commit it').toBe(true);
  }, 60_000);

  it('describe the fields the hand-copied types had lost (Citation heading and page)', () => {
    const text = readFileSync(API_TYPES_FILE, 'utf8');
    const citation = /\n {8}Citation: \{([^}]*)\}/.exec(text)?.[1] ?? '';
    expect(citation).toMatch(/\bheading\?: string;/);
    expect(citation).toMatch(/\bpage\?: number;/);
  });

  it('the document is built without a server: a route factory that reads a service at definition time is named', () => {
    expect(() => apiDocument()).not.toThrow();
    const doc = apiDocument() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/v1/agents/{agent_id}/chat');
  });
});
