/**
 * The benchmark runner: `npm run bench` (everything), `npm run bench -- <name> [<name>...]`, `--smoke`
 * (a seconds-long run for CI). Spawns the mock upstream, Parley, the baseline, the floor, Portkey's
 * gateway and the load generator as separate processes, prints a table per benchmark and a summary, and
 * writes bench/results/<name>.json and .svg. bench/README.md explains every row.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { firstToken } from './benchmarks/first-token.js';
import { streams } from './benchmarks/streams.js';
import { connections } from './benchmarks/connections.js';
import { oneShot } from './benchmarks/one-shot.js';
import { ingest } from './benchmarks/ingest.js';
import { shortTurns } from './benchmarks/short-turns.js';
import { overload } from './benchmarks/overload.js';
import { operatorPush } from './benchmarks/operator-push.js';
import { answers } from './benchmarks/answers.js';
import { webhooks } from './benchmarks/webhooks.js';
import { vectorScan } from './benchmarks/vector-scan.js';
import { retrieval } from './benchmarks/retrieval.js';
import { authCheck } from './benchmarks/auth-check.js';
import { openAICompat } from './benchmarks/openai-compat.js';
import { scale } from './benchmarks/scale.js';
import { replayMemory } from './benchmarks/replay-memory.js';
import type { Ctx } from './benchmarks/common.js';
import { summarizeCpuProfile } from './lib/cpuprofile.js';
import { machineInfo } from './lib/proc.js';
import { formatTable, versusBaseline, versusPortkey, writeOutcome, type BenchOutcome, type Row } from './lib/report.js';

const BENCHMARKS: Record<string, (ctx: Ctx) => Promise<BenchOutcome>> = {
  'first-token': firstToken,
  streams,
  connections,
  'operator-push': operatorPush,
  'short-turns': shortTurns,
  overload,
  'one-shot': oneShot,
  ingest,
  answers,
  webhooks,
  'vector-scan': vectorScan,
  retrieval,
  'auth-check': authCheck,
  'openai-compat': openAICompat,
  scale,
  'replay-memory': replayMemory,
};

const USAGE = `usage: npm run bench -- [${Object.keys(BENCHMARKS).join('|')} ...] [--smoke] [--cpu-prof] [--levels 250,500] [--parley-env KEY=VALUE ...]
  (no name: all)  --smoke: seconds-long run (CI)  --cpu-prof: run the Parley server under node --cpu-prof and print
  its top self-time functions  --levels: stream counts for "streams" (default 100,250,500,1000,1500,2000; smoke 50)
  --parley-env: extra PARLEY_* variables for the Parley server (e.g. PARLEY_SQLITE_SYNCHRONOUS=normal)
  --parley-node-arg: an extra node/V8 argument for the Parley server, repeatable (e.g. --parley-node-arg=--max-semi-space-size=32)
  --quiet-wait S: before each measurement window wait up to S seconds (default 15) until the whole host uses
  <= 0.3 CPU s/s (a shared machine); --no-quiet-gate: don't wait (smoke never waits)
  --reference DIR: another built checkout of Parley (npm run build there) that "scale" runs beside PARLEY_PROCESSES=1
  (e.g. the code before issue 36: the "within 5% of today" targets)`;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      levels: { type: 'string' },
      'parley-env': { type: 'string', multiple: true },
      'parley-node-arg': { type: 'string', multiple: true },
      'no-quiet-gate': { type: 'boolean', default: false },
      'quiet-wait': { type: 'string', default: '15' },
      reference: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const names = positionals.length > 0 ? positionals : Object.keys(BENCHMARKS);
  const unknown = names.filter((n) => !(n in BENCHMARKS));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}\n${USAGE}\n`);
    return 2;
  }
  const levels = values.levels?.split(',').map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0);
  const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
  const resultsDir = join(root, 'bench', 'results');
  const profileDir = join(resultsDir, 'profiles');
  const machine = machineInfo(root);
  const mode = values.smoke ? 'smoke' : 'full';
  const t0 = Date.now();
  const log = (msg: string) => process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
  log(`Parley benchmarks (${mode}): ${names.join(', ')}`);
  log(`machine: ${machine.cpus.count}x ${machine.cpus.model}, ${(machine.total_mem_bytes / 2 ** 30).toFixed(1)} GiB, node ${machine.node}, commit ${machine.git_commit}${machine.git_dirty ? ' (dirty tree)' : ''}, open files ${machine.open_files_limit}`);
  const ctx: Ctx = {
    root, smoke: values.smoke, levels: levels && levels.length > 0 ? levels : undefined, log,
    quiet: values.smoke || values['no-quiet-gate'] ? undefined : { maxBusyCpuPerS: 0.3, maxWaitMs: Math.max(0, Number(values['quiet-wait'])) * 1000 },
    parleyNodeArgs: [...(values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...(values['parley-node-arg'] ?? [])],
    parleyEnv: Object.fromEntries((values['parley-env'] ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
    reference: values.reference === undefined ? undefined : resolve(values.reference),
  };
  if (ctx.reference !== undefined && !existsSync(join(ctx.reference, 'dist/src/main.js'))) {
    process.stderr.write(`--reference ${ctx.reference}: no dist/src/main.js there (run npm ci and npm run build in it)\n`);
    return 2;
  }
  if (Object.keys(ctx.parleyEnv).length > 0) log(`Parley env overrides: ${JSON.stringify(ctx.parleyEnv)}`);
  if ((values['parley-node-arg'] ?? []).length > 0) log(`Parley node arguments: ${(values['parley-node-arg'] ?? []).join(' ')}`);
  const all: Row[] = [];
  let failed = 0;
  for (const name of names) {
    const startedAt = new Date().toISOString();
    const before = Date.now();
    try {
      const outcome = await BENCHMARKS[name]!(ctx);
      const files = writeOutcome(resultsDir, outcome, { machine, mode, startedAt, finishedAt: new Date().toISOString(), argv: process.argv.slice(2) });
      process.stdout.write(`\n== ${name} (${((Date.now() - before) / 1000).toFixed(1)} s) ==\n${formatTable(outcome.rows)}\n`);
      for (const n of outcome.notes) process.stdout.write(`  note: ${n}\n`);
      process.stdout.write(`  wrote ${files.json}, ${files.svg}\n\n`);
      all.push(...outcome.rows);
    } catch (err) {
      failed++;
      process.stdout.write(`\n== ${name}: FAILED ==\n${err instanceof Error ? err.stack ?? err.message : String(err)}\n\n`);
    }
    if (values['cpu-prof']) reportProfiles(profileDir, before);
  }
  if (names.length > 1 && all.length > 0) process.stdout.write(`\n== all benchmarks ==\n${formatTable(all)}\n`);
  const targets = all.filter((r) => r.target);
  if (targets.length > 0) {
    process.stdout.write('\nTargets:\n');
    for (const r of targets) {
      const shown = r.target!.shown ?? { label: 'Parley', value: r.parley };
      process.stdout.write(`  ${r.target!.pass === null ? 'n/a ' : r.target!.pass ? 'PASS' : 'MISS'}  ${r.target!.text}  (${shown.label}: ${shown.value === null ? '—' : shown.value.toFixed(3)} ${'unit' in shown && shown.unit !== undefined ? shown.unit : r.unit})\n`);
    }
    for (const [who, vs] of [['the baseline in every row', versusBaseline], ['Portkey in every row it has', versusPortkey]] as const) {
      const compared = all.filter((r) => vs(r) !== null);
      const behind = compared.filter((r) => vs(r) === 'behind');
      const verdict = compared.length === 0 ? 'n/a ' : behind.length === 0 ? 'PASS' : 'MISS';
      process.stdout.write(`  ${verdict}  ahead of ${who} (${compared.length - behind.length}/${compared.length} rows ahead or tied${behind.length > 0 ? `; behind in: ${behind.map((r) => `${r.bench} ${r.metric}`).join('; ')}` : ''})\n`);
    }
  }
  log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return failed > 0 ? 1 : 0;
}

/** Prints the top self-time functions of the Parley CPU profiles written since `sinceMs`. */
function reportProfiles(dir: string, sinceMs: number): void {
  if (!existsSync(dir)) return;
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.cpuprofile'))) {
    const path = join(dir, f);
    if (statSync(path).mtimeMs < sinceMs) continue;
    process.stdout.write(`\nCPU profile ${path}:\n${summarizeCpuProfile(path, 25)}\n`);
  }
}

main().then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
