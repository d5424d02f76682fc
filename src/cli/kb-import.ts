/**
 * `npm run parley -- kb import <folder> --kb <kb_id|name> [--org <org_id>] [--create]`: ingests every
 * document file under a folder into a knowledge base, in this process's own ingestion workers, writing
 * to the data directory the server uses (SQLite WAL: a running server keeps serving and sees the
 * documents as they become ready). A progress bar (cli-progress) shows documents done / total and MB/s;
 * the failures are listed at the end.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, relative } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { EventBus } from '../events/event-bus.js';
import type { KnowledgeService } from '../knowledge/knowledge-service.js';
import { newId } from '../ids/ids.js';
import type { Store } from '../store/ports.js';
import type { KnowledgeBaseRecord } from '../store/records.js';
import { DOCX_CONTENT_TYPE, type DocumentContentType } from '../vocabulary/document.js';

/** File extensions imported (lower case) and the content type each is ingested as. */
export const IMPORT_EXTENSIONS: Readonly<Record<string, DocumentContentType>> = Object.freeze({
  '.md': 'text/markdown', '.markdown': 'text/markdown', '.txt': 'text/plain', '.text': 'text/plain',
  '.html': 'text/html', '.htm': 'text/html', '.pdf': 'application/pdf', '.docx': DOCX_CONTENT_TYPE,
});

/** A usage problem of the import (unknown base, ambiguous name, missing folder): exit code 2. */
export class ImportUsageError extends Error {}

/** What `kb import` was asked. */
export interface ImportRequest {
  folder: string;
  /** Knowledge base id or exact name. */
  kb: string;
  /** Organization id: required to create a base, and to pick among bases of the same name. */
  org?: string;
  /** Create the knowledge base (named `kb`) when none matches. */
  create: boolean;
}

/** What the import needs: the store, an ingestion service on its own worker pool and the bus it publishes on. */
export interface ImportDeps {
  store: Store;
  knowledge: KnowledgeService;
  bus: EventBus;
  /** Where the progress bar draws (a TTY redraws in place; otherwise a line every half second). */
  progress: NodeJS.WritableStream & { isTTY?: boolean };
  /** Writes one line of the summary. */
  print(line: string): void;
}

/** The outcome: documents ready and failed (file path relative to the folder, with the reason), files skipped. */
export interface ImportSummary {
  knowledgeBase: KnowledgeBaseRecord;
  created: boolean;
  total: number;
  ready: number;
  failed: Array<{ file: string; error: string }>;
  /** Files under the folder with an extension not in IMPORT_EXTENSIONS. */
  skipped: string[];
  bytes: number;
  seconds: number;
}

/** Documents handed to the workers and not yet finished, at most: bounds the memory held by file contents. */
const IN_FLIGHT = 8;

/** Every file under `dir`, recursively, sorted; hidden files and folders (leading dot) left out. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...await filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** A document title from a file name: `child_process.md` -> `Child process` (as the first-run import does). */
export function titleOfFile(file: string): string {
  const base = file.slice(file.lastIndexOf('/') + 1).replace(/\.[^.]+$/, '');
  return base.replace(/[-_]+/g, ' ').trim().replace(/^\w/, (c) => c.toUpperCase()) || base;
}

async function resolveBase(store: Store, req: ImportRequest): Promise<{ kb: KnowledgeBaseRecord; created: boolean }> {
  const found = await store.knowledge.findBases(req.kb, req.org);
  if (found.length === 1) return { kb: found[0]!, created: false };
  if (found.length > 1) {
    const list = found.map((b) => `${b.id} (organization ${b.org_id})`).join(', ');
    throw new ImportUsageError(`Several knowledge bases match "${req.kb}": ${list}. Pass --kb <kb_id>${req.org ? '' : ' or --org <org_id>'}.`);
  }
  if (!req.create) {
    throw new ImportUsageError(`No knowledge base "${req.kb}"${req.org ? ` in organization ${req.org}` : ''}. Pass --create (with --org) to create it.`);
  }
  if (!req.org) throw new ImportUsageError('--create needs --org <org_id>: the organization the new knowledge base belongs to.');
  if (!(await store.organizations.get(req.org))) throw new ImportUsageError(`No organization ${req.org}.`);
  const name = req.kb.trim();
  if (name.length === 0 || name.length > 200) throw new ImportUsageError('A knowledge base name has 1 to 200 characters.');
  const kb: KnowledgeBaseRecord = { id: newId('kb'), org_id: req.org, name, created_at: new Date().toISOString() };
  await store.knowledge.createBase(kb);
  return { kb, created: true };
}

/**
 * Imports the folder: finds (or with `create`, creates) the knowledge base, uploads every file with an
 * extension of {@link IMPORT_EXTENSIONS} (title from the file name), waits until each is ready or failed,
 * then prints a summary with one line per failed file. Resolves the summary; the caller turns failures
 * into the exit code.
 *
 * @throws ImportUsageError for a missing folder, an unknown or ambiguous base, or `create` without `org`.
 */
export async function importFolder(req: ImportRequest, deps: ImportDeps): Promise<ImportSummary> {
  const info = await stat(req.folder).catch(() => undefined);
  if (!info?.isDirectory()) throw new ImportUsageError(`${req.folder} is not a folder.`);
  const { kb, created } = await resolveBase(deps.store, req);
  const all = await filesUnder(req.folder);
  const files = all.filter((f) => IMPORT_EXTENSIONS[extname(f).toLowerCase()] !== undefined);
  const skipped = all.filter((f) => IMPORT_EXTENSIONS[extname(f).toLowerCase()] === undefined).map((f) => relative(req.folder, f));
  deps.print(`Importing ${files.length} document${files.length === 1 ? '' : 's'} from ${req.folder} into ${kb.id} "${kb.name}"${created ? ' (created)' : ''}.`);

  const started = performance.now();
  const failed: ImportSummary['failed'] = [];
  let ready = 0;
  let doneBytes = 0;
  const pending = new Map<string, { file: string; bytes: number }>();
  let wake: (() => void) | undefined;
  const bar = new SingleBar({
    stream: deps.progress, noTTYOutput: true, notTTYSchedule: 500, hideCursor: false, etaBuffer: 20,
    format: 'Ingesting [{bar}] {value}/{total} documents | {mbps} MB/s | {failedCount} failed',
  });
  const mbps = () => (doneBytes / 1e6 / Math.max((performance.now() - started) / 1000, 1e-3)).toFixed(2);
  bar.start(files.length, 0, { mbps: '0.00', failedCount: 0 });

  const finish = (docId: string, outcome: { error?: string }): void => {
    const doc = pending.get(docId);
    if (!doc) return;
    pending.delete(docId);
    doneBytes += doc.bytes;
    if (outcome.error === undefined) ready++;
    else failed.push({ file: doc.file, error: outcome.error });
    bar.increment(1, { mbps: mbps(), failedCount: failed.length });
    wake?.();
  };
  // Outcomes of documents not yet in `pending` (an upload's outcome published before its upload call returned).
  const early = new Map<string, { error?: string }>();
  const unsubscribe = deps.bus.subscribe((event) => {
    if (event.type !== 'document.ready' && event.type !== 'document.failed') return;
    const id = String(event.data.document_id);
    const outcome = event.type === 'document.failed' ? { error: String(event.data.error) } : {};
    if (pending.has(id)) finish(id, outcome);
    else early.set(id, outcome);
  });
  try {
    for (const file of files) {
      while (pending.size >= IN_FLIGHT) await new Promise<void>((resolve) => { wake = resolve; });
      const content = new Uint8Array(await readFile(file));
      const doc = await deps.knowledge.upload(kb, { title: titleOfFile(file), contentType: IMPORT_EXTENSIONS[extname(file).toLowerCase()]!, content });
      pending.set(doc.id, { file: relative(req.folder, file), bytes: doc.bytes });
      const outcome = early.get(doc.id);
      if (outcome) { early.delete(doc.id); finish(doc.id, outcome); }
    }
    await deps.knowledge.settled();
  } finally {
    unsubscribe();
    bar.update({ mbps: mbps(), failedCount: failed.length });
    bar.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  const summary: ImportSummary = { knowledgeBase: kb, created, total: files.length, ready, failed, skipped, bytes: doneBytes, seconds };
  deps.print(`Done in ${seconds.toFixed(1)} s: ${ready} ready, ${failed.length} failed, ${(doneBytes / 1e6).toFixed(2)} MB at ${mbps()} MB/s.`);
  if (skipped.length > 0) deps.print(`Skipped ${skipped.length} file${skipped.length === 1 ? '' : 's'} of other types: ${skipped.slice(0, 10).join(', ')}${skipped.length > 10 ? ', ...' : ''}`);
  if (failed.length > 0) {
    deps.print('Failed:');
    for (const f of failed) deps.print(`  ${f.file}: ${f.error}`);
  }
  return summary;
}
