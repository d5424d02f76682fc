/**
 * `npm run parley -- <group> <action> [--option value ...]`: the self-hoster's command line for
 * organizations, persons, members, the token signing key, folder imports into knowledge bases and store
 * copies (commands in src/cli/commands.ts), on the store the configuration selects (src/store/create-store.ts:
 * PARLEY_MONGODB_URI, else SQLite in PARLEY_DATA_DIR); `store copy` opens the stores it names instead. Options
 * are parsed with node:util parseArgs (strict: unknown options are refused). Passwords are never taken
 * from argv. Exit codes: 0 done, 1 refused (or a document failed to import), 2 bad input.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PasswordHasher } from '../auth/passwords.js';
import { loadConfig } from '../config/config.js';
import { AppError } from '../errors/app-error.js';
import { DirectoryService } from '../runtime/services/directory.js';
import { MemberService } from '../runtime/services/members.js';
import { createStore } from '../store/create-store.js';
import { EventBus } from '../events/event-bus.js';
import { IngestionPool } from '../knowledge/ingestion-pool.js';
import { KnowledgeService } from '../knowledge/knowledge-service.js';
import { embedderFromConfig } from '../knowledge/chunk-embedder.js';
import { createLogger } from '../log/logger.js';
import { COMMANDS, exitCodeOf, usage, UsageError } from './commands.js';
import { ImportUsageError, importFolder } from './kb-import.js';
import { PasswordInputError, readPassword } from './password-input.js';
import { runStoreCopy } from './store-copy.js';
import { CopyRefused } from '../store/copy/copy-side.js';
import { MongoStartupError } from '../store/mongodb/connection.js';

/** Runs the command line with `argv` (without node and the script); resolves with the exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const [group, action, ...rest] = argv;
  if (group === undefined || group === '--help' || group === '-h' || group === 'help') {
    process.stdout.write(`${usage()}\n`);
    return group === undefined ? 2 : 0;
  }
  const name = `${group} ${action ?? ''}`.trim();
  const command = COMMANDS[name];
  if (command === undefined) {
    process.stderr.write(`Unknown command "${name}".\n\n${usage()}\n`);
    return 2;
  }
  let opts: Record<string, string>;
  try {
    const positionalNames = command.positionals ?? [];
    const { values, positionals } = parseArgs({
      args: rest, strict: true, allowPositionals: positionalNames.length > 0,
      options: {
        ...Object.fromEntries([...command.options, ...(command.optional ?? [])].map((o) => [o, { type: 'string' as const }])),
        ...Object.fromEntries((command.flags ?? []).map((f) => [f, { type: 'boolean' as const }])),
      },
    });
    opts = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, String(v)]));
    const missing = command.options.filter((o) => opts[o] === undefined || opts[o].trim() === '');
    if (missing.length) throw new UsageError(`Missing ${missing.map((m) => `--${m}`).join(', ')}.`);
    if (positionals.length !== positionalNames.length) {
      throw new UsageError(`Expected ${positionalNames.map((p) => `<${p}>`).join(' ') || 'no arguments'}, got ${positionals.length} argument${positionals.length === 1 ? '' : 's'}.`);
    }
    positionalNames.forEach((name, i) => { opts[name] = positionals[i]!; });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${message}\nUsage: npm run parley -- ${command.usage}\n`);
    return 2;
  }

  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const print = (line: string) => { process.stdout.write(`${line}\n`); };
  const copyStore = (req: { from: string; to: string; force: boolean }) =>
    runStoreCopy(req, { mongodb: config.mongodbClient, progress: process.stderr, print });
  if (command.standalone) {
    const unavailable = (): never => { throw new Error(`"${name}" works without the configured store`); };
    try {
      return (await command.run({
        directory: undefined as never, members: undefined as never, readPassword: unavailable, print, importFolder: unavailable, copyStore,
      }, opts)) ?? 0;
    } catch (err) {
      process.stderr.write(`${err instanceof CopyRefused || err instanceof MongoStartupError ? err.message : `Failed: ${err instanceof Error ? err.message : String(err)}`}\n`);
      return 1;
    }
  }
  if (config.mongodb === undefined && !existsSync(join(config.dataDir, 'parley.db'))) {
    process.stderr.write(`No Parley data in ${config.dataDir} (no parley.db). Start the server once with this PARLEY_DATA_DIR, or set PARLEY_DATA_DIR to the server's data directory.\n`);
    return 1;
  }
  let store;
  try {
    store = await createStore(config, { user: 'cli' });
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  const passwords = new PasswordHasher({ concurrency: 1, maxWaiting: 10 });
  let pool: IngestionPool | undefined;
  let embeddings: ReturnType<typeof embedderFromConfig>;
  try {
    const code = await command.run({
      directory: new DirectoryService(store, passwords),
      members: new MemberService(store),
      readPassword: () => readPassword(),
      print,
      copyStore,
      importFolder: (req) => {
        // The command's own parser processes, with the server's limits (PARLEY_INGEST_WORKERS, _TIMEOUT_MS, _MEMORY_MB, _MAX_EXPANDED_BYTES);
        // no per-organization bound: the import holds at most a few documents in flight itself.
        pool = new IngestionPool({ processes: config.ingestWorkers, timeoutMs: config.ingestTimeoutMs, memoryMb: config.ingestMemoryMb, nice: config.ingestNice, maxExpandedBytes: config.ingestMaxExpandedBytes, idleMs: 1000 });
        const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr);
        const bus = new EventBus((err) => logger.error({ err }, 'event listener failed'));
        // Chunks are embedded as the server would (PARLEY_EMBEDDINGS_MODEL), so imported documents take part in hybrid search.
        embeddings = embedderFromConfig(config);
        const knowledge = new KnowledgeService(store, pool, bus, logger, undefined, embeddings?.embedder);
        return importFolder(req, { store, knowledge, bus, progress: process.stderr, print });
      },
    }, opts);
    return code ?? 0;
  } catch (err) {
    if (err instanceof AppError || err instanceof UsageError || err instanceof PasswordInputError || err instanceof ImportUsageError) {
      process.stderr.write(`${err.message}\n`);
      if (err instanceof ImportUsageError) return 2;
      return err instanceof PasswordInputError ? 1 : exitCodeOf(err);
    }
    process.stderr.write(`Failed: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    await pool?.close();
    await embeddings?.close();
    await store.close();
  }
}

runCli(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (err: unknown) => {
  process.stderr.write(`Failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
