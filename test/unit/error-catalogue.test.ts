import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { ERROR_CATALOGUE } from '../../src/errors/catalogue.js';

/** Rows `| \`code\` | type | status |` of the README's error table. */
function readmeCodes(): Map<string, { type: string; status: number }> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const rows = new Map<string, { type: string; status: number }>();
  for (const m of readme.matchAll(/^\| `(\w+)` \| (\w+) \| (\d{3}) \|$/gm)) rows.set(m[1]!, { type: m[2]!, status: Number(m[3]) });
  return rows;
}

describe('error catalogue', () => {
  it('README lists exactly the catalogue, with the same type and status', () => {
    const rows = readmeCodes();
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
    for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) expect(rows.get(code)).toEqual(entry);
  });

  it('covers the minimum codes of API.md "Errors"', () => {
    const required = ['invalid_json', 'validation_failed', 'missing_org_id', 'missing_credentials', 'invalid_api_key',
      'revoked_api_key', 'invalid_token', 'expired_token', 'invalid_refresh_token', 'not_a_member', 'forbidden', 'not_found',
      'conversation_closed', 'turn_in_progress', 'body_too_large', 'unsupported_content_type', 'rate_limited',
      'model_unavailable', 'model_timeout', 'internal_error', 'shutting_down'];
    for (const code of required) expect(ERROR_CATALOGUE).toHaveProperty(code);
  });

  it('AppError takes type and status from the catalogue and serializes to the API.md shape', () => {
    const e = new AppError('turn_in_progress', 'busy');
    expect(e.status).toBe(409);
    expect(e.toBody('req_1')).toEqual({ type: 'conflict_error', code: 'turn_in_progress', message: 'busy', request_id: 'req_1' });
  });
});
