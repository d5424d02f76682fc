import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { acceptsGzip, loadStaticSite, noneMatch, type StaticResult } from '../../src/transport/static/static-site.js';

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** A built site in a temp folder. */
function site(files: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'parley-site-'));
  dirs.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return { dir, site: loadStaticSite({ dir, mount: '/app', fallback: 'index.html', immutablePrefix: 'assets/', headers: { 'X-Test': '1' }, missingMessage: 'not built' }) };
}

const bytes = (r: StaticResult) => (r.kind === 'bytes' ? Buffer.from(r.body).toString() : '');

describe('acceptsGzip (RFC 9110 12.5.3)', () => {
  it.each([
    ['gzip', true], ['gzip, deflate, br', true], ['br;q=1.0, gzip;q=0.5', true], ['*', true], ['x-gzip', true],
    [undefined, false], ['', false], ['identity', false], ['br', false], ['gzip;q=0', false], ['gzip; q=0.000', false],
    ['*;q=0', false], ['gzip;q=0, *', false], ['*, gzip;q=0', false], ['br, *;q=0.1', true],
  ])('%s -> %s', (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });
});

describe('noneMatch (RFC 9110 13.1.2, weak comparison)', () => {
  it.each([
    ['"abc"', '"abc"', true], ['W/"abc"', '"abc"', true], ['"x", "abc"', '"abc"', true], ['*', '"abc"', true],
    ['"abcd"', '"abc"', false], [undefined, '"abc"', false], ['abc', '"abc"', false],
  ])('%s against %s -> %s', (header, etag, expected) => {
    expect(noneMatch(header, etag)).toBe(expected);
  });
});

describe('loadStaticSite', () => {
  it('reads the files once: a change on disk after loading is not served', () => {
    const { dir, site: s } = site({ 'index.html': '<p>one</p>', 'assets/a-1.js': 'let a = 1;' });
    expect(s.files).toEqual(['assets/a-1.js', 'index.html']);
    writeFileSync(join(dir, 'index.html'), '<p>two</p>');
    expect(bytes(s.answer('GET', '/app', {}))).toBe('<p>one</p>');
  });

  it('owns the mount and what is under it, nothing else', () => {
    const { site: s } = site({ 'index.html': 'x' });
    expect(['/app', '/app/', '/app/keys', '/app/assets/x.js'].map((p) => s.owns(p))).toEqual([true, true, true, true]);
    expect(['/ap', '/apple', '/v1/app', '/'].map((p) => s.owns(p))).toEqual([false, false, false, false]);
  });

  it('puts its headers on errors too, and says what is missing when the folder is', () => {
    const { site: s } = site({ 'index.html': 'x' });
    let thrown: unknown;
    try { s.answer('GET', '/app/assets/none.js', {}); } catch (err) { thrown = err; }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).code).toBe('not_found');
    expect((thrown as AppError).headers).toEqual({ 'X-Test': '1' });

    const none = loadStaticSite({ dir: join(tmpdir(), 'parley-no-such-dir-x'), mount: '/app', fallback: 'index.html', immutablePrefix: 'assets/', headers: {}, missingMessage: 'not built' });
    expect(none.available).toBe(false);
    expect(() => none.answer('GET', '/app', {})).toThrow('not built');
  });

  it('keeps a gzip form only when it is smaller', () => {
    const { site: s } = site({ 'index.html': 'x', 'assets/big.css': 'a{color:red}'.repeat(200) });
    const tiny = s.answer('GET', '/app/index.html', { 'accept-encoding': 'gzip' });
    expect(tiny.headers?.['Content-Encoding']).toBeUndefined();
    expect(tiny.headers?.Vary).toBeUndefined();
    const big = s.answer('GET', '/app/assets/big.css', { 'accept-encoding': 'gzip' });
    expect(big.headers?.['Content-Encoding']).toBe('gzip');
  });
});
