/**
 * The commands of the `parley` command line (`npm run parley -- <group> <action> [options]`): what each
 * takes and does. They work on the store of PARLEY_MONGODB_URI, else on the data directory of
 * PARLEY_DATA_DIR, through the same services the server uses, while the server may be running (SQLite WAL:
 * the server keeps serving; writes wait for one another). src/cli/main.ts parses argv and runs them.
 */
import { AppError } from '../errors/app-error.js';
import type { DirectoryService } from '../runtime/services/directory.js';
import type { MemberService } from '../runtime/services/members.js';
import { RoleSchema, type Role } from '../vocabulary/role.js';
import type { ImportRequest, ImportSummary } from './kb-import.js';

/** What a command needs. */
export interface CliContext {
  directory: DirectoryService;
  members: MemberService;
  /** Reads a new password (hidden prompt or stdin). */
  readPassword(): Promise<string>;
  /** Writes one line of output to stdout. */
  print(line: string): void;
  /** Imports a folder into a knowledge base (src/cli/kb-import.ts), in ingestion workers started for it. */
  importFolder(req: ImportRequest): Promise<ImportSummary>;
  /** Copies a store into another (src/cli/store-copy.ts); resolves with the exit code. */
  copyStore(req: { from: string; to: string; force: boolean }): Promise<number>;
}

/** A usage error: exit code 2 with the message and the command's usage. */
export class UsageError extends Error {}

/**
 * One command: its required options (`--name value`), optional ones, boolean flags (`--name`, passed to
 * `run` as `'true'`), positional arguments (all required, passed under their names), usage line and
 * action. `run` may resolve an exit code (default 0).
 */
export interface Command {
  usage: string;
  summary: string;
  options: readonly string[];
  optional?: readonly string[];
  flags?: readonly string[];
  positionals?: readonly string[];
  /** The command opens the stores it names itself: the configured store is not opened for it. */
  standalone?: boolean;
  run(ctx: CliContext, opts: Record<string, string>): Promise<number | void>;
}

function role(value: string): Role {
  const r = RoleSchema.safeParse(value);
  if (!r.success) throw new UsageError(`--role must be one of ${RoleSchema.options.join(', ')}, not ${JSON.stringify(value)}.`);
  return r.data;
}

export const COMMANDS: Record<string, Command> = {
  'orgs create': {
    usage: 'orgs create --name <name>',
    summary: 'Create an organization.',
    options: ['name'],
    async run(ctx, o) {
      const org = await ctx.directory.createOrganization(o.name!);
      ctx.print(`Created organization ${org.id} "${org.name}".`);
    },
  },
  'users create': {
    usage: 'users create --email <email> --org <org_id> --role <owner|admin|operator>',
    summary: 'Create a person and make them a member of an organization (set a password next).',
    options: ['email', 'org', 'role'],
    async run(ctx, o) {
      const r = role(o.role!);
      const org = await ctx.directory.organization(o.org!);
      const user = await ctx.directory.createUser(o.email!);
      await ctx.members.add('system', org.id, user.email, r);
      ctx.print(`Created ${user.email} (${user.id}) as ${r} of ${org.id} "${org.name}".`);
      ctx.print(`They cannot sign in until a password is set: npm run parley -- users set-password --email ${user.email}`);
    },
  },
  'users set-password': {
    usage: 'users set-password --email <email>   (the password is read from stdin or a hidden prompt)',
    summary: 'Set a person\'s password (8..128 characters) and end their sessions.',
    options: ['email'],
    async run(ctx, o) {
      await ctx.directory.userByEmail(o.email!);
      const password = await ctx.readPassword();
      const { user, sessionsEnded } = await ctx.directory.setPassword(o.email!, password);
      ctx.print(`Password set for ${user.email}; ${sessionsEnded} session${sessionsEnded === 1 ? '' : 's'} ended.`);
    },
  },
  'users delete': {
    usage: 'users delete --email <email>',
    summary: 'Delete a person with their memberships and sessions (not an organization\'s only owner).',
    options: ['email'],
    async run(ctx, o) {
      const user = await ctx.directory.deleteUser(o.email!);
      ctx.print(`Deleted ${user.email} (${user.id}).`);
    },
  },
  'members add': {
    usage: 'members add --email <email> --org <org_id> --role <owner|admin|operator>',
    summary: 'Make an existing person a member of an organization.',
    options: ['email', 'org', 'role'],
    async run(ctx, o) {
      const r = role(o.role!);
      const org = await ctx.directory.organization(o.org!);
      const m = await ctx.members.add('system', org.id, o.email!, r);
      ctx.print(`Added ${m.email} to ${org.id} "${org.name}" as ${m.role}.`);
    },
  },
  'members remove': {
    usage: 'members remove --email <email> --org <org_id>',
    summary: 'Remove a person from an organization (not its only owner).',
    options: ['email', 'org'],
    async run(ctx, o) {
      const org = await ctx.directory.organization(o.org!);
      const user = await ctx.directory.userByEmail(o.email!);
      await ctx.members.remove('system', org.id, user.id);
      ctx.print(`Removed ${user.email} from ${org.id} "${org.name}".`);
    },
  },
  'kb import': {
    usage: 'kb import <folder> --kb <kb_id|name> [--org <org_id>] [--create]',
    summary: 'Import every .md, .txt, .html, .pdf and .docx file under a folder into a knowledge base (--create makes it, named --kb, in --org); exit 1 when any document failed.',
    options: ['kb'],
    optional: ['org'],
    flags: ['create'],
    positionals: ['folder'],
    async run(ctx, o) {
      const summary = await ctx.importFolder({ folder: o.folder!, kb: o.kb!, ...(o.org ? { org: o.org } : {}), create: o.create === 'true' });
      return summary.failed.length > 0 ? 1 : 0;
    },
  },
  'store copy': {
    usage: 'store copy --from <data dir | mongodb URI> --to <data dir | mongodb URI> [--force]',
    summary: 'Copy a whole store into another (SQLite or MongoDB, either way; a consistent snapshot of a running server), with a progress bar; '
      + 'refuses a target that holds data unless --force; checks the rows of every table at the end (exit 1 when they differ).',
    options: ['from', 'to'],
    flags: ['force'],
    standalone: true,
    async run(ctx, o) {
      return ctx.copyStore({ from: o.from!, to: o.to!, force: o.force === 'true' });
    },
  },
  'keys rotate-signing': {
    usage: 'keys rotate-signing',
    summary: 'Rotate the access-token signing key (tokens of the old key stay valid until they expire, at most 15 minutes).',
    options: [],
    async run(ctx) {
      const { kid, retired } = await ctx.directory.rotateSigningKey();
      ctx.print(`New signing key ${kid} is active${retired.length ? `; retired ${retired.join(', ')}` : ''}.`);
      ctx.print('Tokens signed with a retired key stay valid until they expire (at most 15 minutes); a running server signs with the new key from its next sign-in.');
    },
  },
};

/** The help text. */
export function usage(): string {
  return [
    'Usage: npm run parley -- <command> [options]',
    '',
    'Works on the data directory of PARLEY_DATA_DIR (default ./data), also while the server runs.',
    '',
    'Commands:',
    ...Object.values(COMMANDS).flatMap((c) => [`  ${c.usage}`, `      ${c.summary}`]),
    '',
    'Exit codes: 0 done, 1 refused (not found, conflict, last owner, ...) or a document failed to import, 2 bad input.',
  ].join('\n');
}

/** Exit code of an error: 2 for bad input, 1 for a refused operation. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return 2;
  if (err instanceof AppError && err.code === 'validation_failed') return 2;
  return 1;
}
