/**
 * The ingestion worker: a Piscina worker module (loaded from its compiled form,
 * `dist/src/knowledge/ingest.worker.js`, by src/knowledge/ingestion-pool.ts) that decodes,
 * parses and chunks one document per task. The main thread stores the chunks.
 */
import { z } from 'zod';
import { chunkSections } from './chunker.js';
import { markdownNestingDepth, MAX_MARKDOWN_NESTING, parseDocument } from './parse-document.js';
import { DOCUMENT_CONTENT_TYPES, type IngestResult, type IngestTask } from './types.js';

const ingestTaskSchema = z.object({
  title: z.string(),
  contentType: z.enum(DOCUMENT_CONTENT_TYPES),
  content: z.union([z.string(), z.instanceof(Uint8Array)]),
});

/**
 * Ingests one document: validates the task, decodes `content` (bytes as strict UTF-8, a leading
 * BOM dropped; strings as they are), parses it by `contentType` and chunks it with the default
 * sizes of src/knowledge/chunker.ts.
 *
 * Never throws for a bad task or document; it resolves `{ok:false, error}` with a one-line reason:
 * `invalid ingestion task: ...`, `document is not valid UTF-8 text`,
 * `document contains NUL bytes (corrupt or binary file)`, `document is empty`,
 * `document nests deeper than 64 levels (block quotes or lists)` (Markdown only, checked by a linear
 * scan before the recursive parser runs, see MAX_MARKDOWN_NESTING), `document has no indexable text`,
 * or `document could not be parsed: ...`.
 * On success `characters` is the decoded text's length in UTF-16 code units (BOM excluded,
 * line ends as uploaded).
 */
export default async function ingest(task: IngestTask): Promise<IngestResult> {
  const parsed = ingestTaskSchema.safeParse(task);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    return fail(`invalid ingestion task: ${where}${issue?.message ?? 'bad shape'}`);
  }
  const { contentType, content } = parsed.data;

  let text: string;
  if (typeof content === 'string') {
    text = content.charCodeAt(0) === 0xfeff ? content.slice(1) : content;
  } else {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(content);
    } catch {
      return fail('document is not valid UTF-8 text');
    }
  }
  if (text.includes('\u0000')) return fail('document contains NUL bytes (corrupt or binary file)');
  if (text.trim().length === 0) return fail('document is empty');
  if (contentType === 'text/markdown' && markdownNestingDepth(text, MAX_MARKDOWN_NESTING) > MAX_MARKDOWN_NESTING) {
    return fail(`document nests deeper than ${MAX_MARKDOWN_NESTING} levels (block quotes or lists)`);
  }

  try {
    const chunks = chunkSections(parseDocument(text, contentType));
    if (chunks.length === 0) return fail('document has no indexable text');
    return { ok: true, chunks, characters: text.length };
  } catch (err) {
    return fail(`document could not be parsed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function fail(error: string): IngestResult {
  return { ok: false, error: error.replace(/\s+/g, ' ').trim().slice(0, 500) };
}
