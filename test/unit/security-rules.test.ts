/**
 * The rules of the security review's fixes (issue 35) that need no server: the metadata schema
 * (Stripe's rules), the bounds of a validation error, the metrics token check, and the data directory's
 * exposed paths. Literal expectations; no assertion inside an `if`.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import { HealthService } from '../../src/runtime/services/health.js';
import type { Store } from '../../src/store/ports.js';
import { ensureDataDir, ensurePrivateFile, exposedPaths, fixModesCommand } from '../../src/store/sqlite/data-dir.js';
import { validate } from '../../src/transport/http/validate.js';
import { MetadataSchema } from '../../src/vocabulary/metadata.js';

const entries = (n: number, key = (i: number) => `k${i}`, value = 'v') => Object.fromEntries(Array.from({ length: n }, (_, i) => [key(i), value]));
const issues = (v: unknown) => {
  const r = MetadataSchema.safeParse(v);
  return r.success ? 'ok' : r.error.issues.map((i) => [i.path.join('.'), i.message]);
};

describe('metadata (Stripe\'s rules)', () => {
  it('takes up to 50 keys of 1-40 characters with string values of up to 500 characters', () => {
    expect(issues({})).toBe('ok');
    expect(issues(entries(50, (i) => `${'k'.repeat(38)}${String(i).padStart(2, '0')}`, 'v'.repeat(500)))).toBe('ok');
    expect(issues({ a: '' })).toBe('ok');
    expect(MetadataSchema.parse({ name: 'Ada' })).toEqual({ name: 'Ada' });
  });

  it('refuses 51 keys with one issue, whatever the entries hold', () => {
    expect(issues(entries(51))).toEqual([['', 'must have at most 50 keys']]);
    expect(issues(entries(90_000, (i) => `${i}`, 42 as unknown as string))).toEqual([['', 'must have at most 50 keys']]);
  });

  it('counts own keys only', () => {
    const inherited = Object.create(entries(60)) as Record<string, unknown>;
    inherited.own = 'v';
    expect(MetadataSchema.safeParse(inherited).success).toBe(true);
  });

  it('refuses long or empty keys and values that are not strings of at most 500 characters', () => {
    const keyIssue = (v: unknown) => {
      const r = MetadataSchema.safeParse(v);
      return r.success ? 'ok' : r.error.issues.map((i) => [i.code, i.path.join('.'), i.code === 'invalid_key' ? i.issues.map((k) => k.message) : []]);
    };
    expect(keyIssue({ ['k'.repeat(41)]: 'v' })).toEqual([['invalid_key', 'k'.repeat(41), ['keys must have 1 to 40 characters']]]);
    expect(keyIssue({ '': 'v' })).toEqual([['invalid_key', '', ['keys must have 1 to 40 characters']]]);
    expect(keyIssue({ ['k'.repeat(40)]: 'v' })).toBe('ok');
    expect(issues({ a: 'x'.repeat(501) })).toEqual([['a', 'values must have at most 500 characters']]);
    expect(issues({ a: 1, b: null, c: { d: 'e' } })).toEqual([['a', 'values must be strings'], ['b', 'values must be strings'], ['c', 'values must be strings']]);
    expect(issues('text')).toEqual([['', 'Invalid input: expected record, received string']]);
    expect(issues(null)).toEqual([['', 'Invalid input: expected record, received null']]);
  });

  it('a string or an array is refused as not a record, whatever its length (no key counting of strings)', () => {
    expect(issues('x'.repeat(60))).toEqual([['', 'Invalid input: expected record, received string']]);
    expect(issues(Array.from({ length: 60 }, () => 'a'))).toEqual([['', 'Invalid input: expected record, received array']]);
  });

  it('describes itself in JSON Schema with the same limits', () => {
    const schema = z.toJSONSchema(MetadataSchema, { io: 'input', unrepresentable: 'any' }) as { $defs: Record<string, unknown> };
    expect(schema.$defs.Metadata).toMatchObject({
      type: 'object', maxProperties: 50, propertyNames: { type: 'string', minLength: 1, maxLength: 40 },
      additionalProperties: { type: 'string', maxLength: 500 },
    });
    expect((schema.$defs.Metadata as { description: string }).description).toContain('at most 50 keys');
  });
});

describe('validation errors are bounded', () => {
  const Body = z.object({ name: z.string() }).strict();
  const errorsOf = (value: unknown) => {
    try { validate(Body, value, 'body'); } catch (err) { return err as { code: string; message: string; details?: unknown; errors?: unknown }; }
    throw new Error('no error');
  };

  it('lists at most 20 problems, then counts the rest', () => {
    const e = errorsOf({ name: 'x', ...entries(25, (i) => `extra${i}`) });
    expect(e.code).toBe('validation_failed');
    const list = (e as unknown as { errors: Array<{ path: string; message: string }> }).errors;
    expect(list).toHaveLength(21);
    expect(list[19]).toEqual({ path: 'extra19', message: 'unknown field' });
    expect(list[20]).toEqual({ path: 'body', message: 'and 5 more problems' });
    expect(e.message).toContain('and 5 more problems');
  });

  it('returns the parsed value when it is valid', () => {
    expect(validate(Body, { name: 'x' }, 'body')).toEqual({ name: 'x' });
  });

  it('names nested paths with dots, a record key by its own rule, and joins problems in the message', () => {
    const Nested = z.object({ model: z.object({ name: z.string() }).strict(), meta: z.record(z.string().max(3, 'keys up to 3'), z.string()) }).strict();
    let error: { message: string; errors: Array<{ path: string; message: string }> } | undefined;
    try { validate(Nested, { model: { name: 'a', temprature: 1 }, meta: { long: 'v' } }, 'body'); } catch (err) { error = err as typeof error; }
    expect(error!.errors).toEqual([{ path: 'model.temprature', message: 'unknown field' }, { path: 'meta.long', message: 'keys up to 3' }]);
    expect(error!.message).toBe('The request body is invalid: model.temprature: unknown field; meta.long: keys up to 3.');
  });

  it('exactly 20 problems are all listed, with no count', () => {
    const list = (errorsOf({ name: 'x', ...entries(20, (i) => `extra${i}`) }) as unknown as { errors: unknown[] }).errors;
    expect(list).toHaveLength(20);
  });

  it('cuts a path segment at 64 characters; 64 stay whole', () => {
    const cut = (errorsOf({ name: 'x', ['y'.repeat(65)]: 1 }) as unknown as { errors: Array<{ path: string }> }).errors;
    expect(cut).toEqual([{ path: `${'y'.repeat(64)}…`, message: 'unknown field' }]);
    const whole = (errorsOf({ name: 'x', ['z'.repeat(64)]: 1 }) as unknown as { errors: Array<{ path: string }> }).errors;
    expect(whole).toEqual([{ path: 'z'.repeat(64), message: 'unknown field' }]);
    const nested = (errorsOf({ name: 5 }) as unknown as { errors: Array<{ path: string }> }).errors;
    expect(nested).toEqual([{ path: 'name', message: 'Invalid input: expected string, received number' }]);
  });
});

describe('the metrics token', () => {
  const store = {} as Store;
  const outcome = (h: HealthService, authorization: string | undefined) => {
    try { h.checkMetricsAccess(authorization); return 'allowed'; } catch (err) {
      const e = err as { code: string; status: number; headers?: Record<string, string> };
      return [e.status, e.code, e.headers?.['WWW-Authenticate']];
    }
  };

  it('without a token configured, anything goes', () => {
    const open = new HealthService(store, () => false);
    expect(outcome(open, undefined)).toBe('allowed');
    expect(outcome(open, 'Bearer whatever')).toBe('allowed');
  });

  it('refusals say what to send', () => {
    const guarded = new HealthService(store, () => false, 'metrics-0123456789abcdef');
    expect(() => guarded.checkMetricsAccess(undefined)).toThrow('The metrics need "Authorization: Bearer <PARLEY_METRICS_TOKEN>".');
    expect(() => guarded.checkMetricsAccess('Bearer nope-nope-nope-nope')).toThrow('The metrics token is not valid.');
  });

  it('with one: only "Bearer <token>" (the scheme in any case, spaces around allowed)', () => {
    const guarded = new HealthService(store, () => false, 'metrics-0123456789abcdef');
    expect(outcome(guarded, 'Bearer metrics-0123456789abcdef')).toBe('allowed');
    expect(outcome(guarded, 'BEARER metrics-0123456789abcdef')).toBe('allowed');
    expect(outcome(guarded, 'Bearer  metrics-0123456789abcdef ')).toBe('allowed');
    expect(outcome(guarded, undefined)).toEqual([401, 'missing_credentials', 'Bearer realm="metrics"']);
    expect(outcome(guarded, '')).toEqual([401, 'missing_credentials', 'Bearer realm="metrics"']);
    for (const wrong of ['Bearer metrics-0123456789abcde', 'Bearer metrics-0123456789abcdefg', 'Basic metrics-0123456789abcdef', 'metrics-0123456789abcdef', 'Bearer', 'xBearer metrics-0123456789abcdef', 'Bearer metrics-0123456789abcdef x']) {
      expect(outcome(guarded, wrong), wrong).toEqual([401, 'invalid_token', 'Bearer realm="metrics"']);
    }
  });
});

describe('the data directory\'s modes', () => {
  const root = mkdtempSync(join(tmpdir(), 'parley-modes-unit-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  // The process umask can only take bits away, and 0700/0600 have none for the group or others: the
  // integration test (data-dir-modes.test.ts) runs a server under umask 022.
  it('creates the directory 0700 and a file 0600, leaving an existing one as it is', () => {
    const dir = join(root, 'a', 'b');
    ensureDataDir(dir);
    ensurePrivateFile(join(dir, 'db'));
    expect([statSync(dir).mode & 0o777, statSync(join(root, 'a')).mode & 0o777, statSync(join(dir, 'db')).mode & 0o777]).toEqual([0o700, 0o700, 0o600]);
    expect(exposedPaths(dir)).toEqual([]);
    expect(exposedPaths(join(root, 'a'))).toEqual([]);
    writeFileSync(join(dir, 'db'), 'kept');
    chmodSync(join(dir, 'db'), 0o640);
    ensurePrivateFile(join(dir, 'db'));
    expect(exposedPaths(dir)).toEqual([{ path: join(dir, 'db'), mode: 0o640 }]);
  });

  it('lists the directory and each entry that gives the group or others any access, directory first, by name', () => {
    const dir = join(root, 'exposed');
    mkdirSync(dir, { mode: 0o700 });
    // Made in an order that is not sorted either way (the file system may list them as made, or reversed).
    for (const [name, mode] of [['m', 0o660], ['b', 0o601], ['z', 0o604], ['a', 0o600]] as const) {
      writeFileSync(join(dir, name), '');
      chmodSync(join(dir, name), mode);
    }
    expect(exposedPaths(dir)).toEqual([{ path: join(dir, 'b'), mode: 0o601 }, { path: join(dir, 'm'), mode: 0o660 }, { path: join(dir, 'z'), mode: 0o604 }]);
    chmodSync(dir, 0o710);
    expect(exposedPaths(dir)[0]).toEqual({ path: dir, mode: 0o710 });
    expect(exposedPaths(join(root, 'missing'))).toEqual([]);
  });

  it('names the command that fixes it, quoted for the shell', () => {
    expect(fixModesCommand('/srv/parley data')).toBe("chmod -R go-rwx '/srv/parley data'");
    expect(fixModesCommand("/srv/it's")).toBe("chmod -R go-rwx '/srv/it'\\''s'");
  });
});
