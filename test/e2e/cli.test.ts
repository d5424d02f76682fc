/**
 * The `parley` command line (`node dist/src/cli/main.js`, what `npm run parley --` runs) on the data
 * directory of a running server: organizations, persons, passwords from stdin (never argv), members, the
 * last-owner rule, signing-key rotation while tokens are in use, and the exit codes of bad input.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

const CLI = resolve(import.meta.dirname, '../../dist/src/cli/main.js');

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer(); });
afterAll(async () => { await srv?.close(); });

/** Runs the CLI with `args` on the server's data dir (or `dataDir`), `stdin` piped in; its exit code and output. */
function cli(args: string[], stdin = '', dataDir = srv.dataDir): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: 'silent' } }, (err, stdout, stderr) => {
      done({ code: err ? (err as { code?: number }).code ?? 1 : 0, stdout, stderr });
    });
    child.stdin!.end(stdin);
  });
}

const login = (email: string, password: string) => fetch(`${srv.url}/v1/auth/login`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
});

describe('parley CLI on a running server\'s data dir', () => {
  let orgId: string;

  it('orgs create, users create, users set-password (stdin): the person signs in to the new organization', async () => {
    const org = await cli(['orgs', 'create', '--name', 'Acme Inc']);
    expect(org.code).toBe(0);
    orgId = /Created organization (org_\w+) "Acme Inc"\./.exec(org.stdout)![1]!;
    const user = await cli(['users', 'create', '--email', 'Ada@Example.com', '--org', orgId, '--role', 'owner']);
    expect(user.code).toBe(0);
    expect(user.stdout).toMatch(new RegExp(`^Created ada@example.com \\(usr_\\w+\\) as owner of ${orgId} "Acme Inc"\\.\\n`));
    expect(user.stdout).toContain('npm run parley -- users set-password --email ada@example.com');
    // No password yet: sign-in is refused.
    expect((await login('ada@example.com', 'correct horse battery')).status).toBe(401);
    const pw = await cli(['users', 'set-password', '--email', 'ada@example.com'], 'correct horse battery\n');
    expect(pw).toMatchObject({ code: 0, stdout: 'Password set for ada@example.com; 0 sessions ended.\n' });
    const res = await login('ada@example.com', 'correct horse battery');
    expect(res.status).toBe(200);
    expect((await res.json() as { organizations: unknown[] }).organizations).toEqual([{ id: orgId, name: 'Acme Inc', role: 'owner' }]);
    // Setting it again ends the session just made.
    expect((await cli(['users', 'set-password', '--email', 'ada@example.com'], 'another good password\r\n')).stdout)
      .toBe('Password set for ada@example.com; 1 session ended.\n');
    expect((await login('ada@example.com', 'another good password')).status).toBe(200);
  });

  it('members add and remove; the last owner stays (exit 1)', async () => {
    expect((await cli(['users', 'create', '--email', 'bob@example.com', '--org', orgId, '--role', 'operator'])).code).toBe(0);
    await cli(['users', 'set-password', '--email', 'bob@example.com'], 'bobs password here\n');
    const add = await cli(['members', 'add', '--email', 'bob@example.com', '--org', srv.orgId, '--role', 'admin']);
    expect(add).toMatchObject({ code: 0, stdout: `Added bob@example.com to ${srv.orgId} "Test org" as admin.\n` });
    const session = await (await login('bob@example.com', 'bobs password here')).json() as { organizations: Array<{ id: string; role: string }> };
    expect(session.organizations.map((o) => [o.id, o.role]).sort()).toEqual([[orgId, 'operator'], [srv.orgId, 'admin']].sort());
    const again = await cli(['members', 'add', '--email', 'bob@example.com', '--org', srv.orgId, '--role', 'admin']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already a member');
    const last = await cli(['members', 'remove', '--email', 'ada@example.com', '--org', orgId]);
    expect(last.code).toBe(1);
    expect(last.stderr).toBe('An organization keeps at least one owner; make someone else an owner first.\n');
    const removed = await cli(['members', 'remove', '--email', 'bob@example.com', '--org', orgId]);
    expect(removed).toMatchObject({ code: 0, stdout: `Removed bob@example.com from ${orgId} "Acme Inc".\n` });
    const deleteOwner = await cli(['users', 'delete', '--email', 'ada@example.com']);
    expect(deleteOwner.code).toBe(1);
    expect((await cli(['users', 'delete', '--email', 'bob@example.com'])).code).toBe(0);
    expect((await login('bob@example.com', 'bobs password here')).status).toBe(401);
  });

  it('keys rotate-signing while the server runs: old tokens keep working, new sign-ins use the new key', async () => {
    const before = await (await login('ada@example.com', 'another good password')).json() as { access_token: string };
    const oldKid = decodeProtectedHeader(before.access_token).kid;
    const rotated = await cli(['keys', 'rotate-signing']);
    expect(rotated.code).toBe(0);
    const [, newKid, retired] = /^New signing key (\S+) is active; retired (\S+)\.\n/.exec(rotated.stdout)!;
    expect(retired).toBe(oldKid);
    expect(newKid).not.toBe(oldKid);
    const asOld = { authorization: `Bearer ${before.access_token}`, 'x-org-id': orgId };
    expect((await fetch(`${srv.url}/v1/agents`, { headers: asOld })).status).toBe(200);
    const after = await (await login('ada@example.com', 'another good password')).json() as { access_token: string };
    expect(decodeProtectedHeader(after.access_token).kid).toBe(newKid);
    expect((await fetch(`${srv.url}/v1/agents`, { headers: { authorization: `Bearer ${after.access_token}`, 'x-org-id': orgId } })).status).toBe(200);
    expect((await fetch(`${srv.url}/v1/agents`, { headers: asOld })).status).toBe(200);
  });

  it('bad input exits 2 with a clear message; passwords are never taken from argv', async () => {
    const cases: Array<[string[], string, RegExp]> = [
      [['users', 'create', '--email', 'c@example.com', '--org', orgId, '--role', 'king'], '', /--role must be one of owner, admin, operator, not "king"/],
      [['users', 'create', '--email', 'not-an-email', '--org', orgId, '--role', 'admin'], '', /email must be an e-mail address/],
      [['users', 'set-password', '--email', 'ada@example.com', '--password', 'hunter22'], '', /Unknown option '--password'/],
      [['users', 'set-password', '--email', 'ada@example.com'], 'short\n', /password must be at least 8 characters/],
      [['orgs', 'create'], '', /Missing --name/],
      [['orgs', 'create', '--name', 'x', 'extra'], '', /Unexpected argument 'extra'/],
      [['frobnicate'], '', /Unknown command "frobnicate"/],
      [[], '', /Usage: npm run parley -- <command>/],
    ];
    for (const [args, stdin, message] of cases) {
      const r = await cli(args, stdin);
      expect(r.code, args.join(' ')).toBe(2);
      expect(`${r.stderr}${r.stdout}`, args.join(' ')).toMatch(message);
    }
    // The rejected password did not replace the current one.
    expect((await login('ada@example.com', 'another good password')).status).toBe(200);
  });

  it('refused operations exit 1: unknown organization or person, empty stdin, a data dir without Parley data', async () => {
    expect(await cli(['members', 'add', '--email', 'ada@example.com', '--org', 'org_nope', '--role', 'admin'])).toMatchObject({ code: 1, stderr: 'No organization org_nope.\n' });
    expect(await cli(['users', 'set-password', '--email', 'ghost@example.com'], 'a long enough password\n')).toMatchObject({ code: 1, stderr: 'No person has the e-mail ghost@example.com.\n' });
    const empty = await cli(['users', 'set-password', '--email', 'ada@example.com'], '');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('No password on stdin');
    const dir = mkdtempSync(join(tmpdir(), 'parley-cli-empty-'));
    try {
      const none = await cli(['orgs', 'create', '--name', 'x'], '', dir);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain(`No Parley data in ${dir}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--help prints the usage and exits 0', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const c of ['orgs create', 'users create', 'users set-password', 'members add', 'members remove', 'keys rotate-signing']) expect(help.stdout).toContain(c);
  });
});
