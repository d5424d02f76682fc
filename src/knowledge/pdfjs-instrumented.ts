/**
 * pdf.js counts no decoded bytes: a FlateDecode content stream of a few MB that inflates to GBs is
 * decoded whole into one growing buffer (issue 35: a 1.5 MB PDF raised the server's memory by 1.5 GB and
 * was `ready`), and pdf.js has no option that bounds it. So the ingestion process loads pdf.js's core
 * (`pdfjs-dist/legacy/build/pdf.worker.mjs`, the code the "fake worker" runs in the same thread) with
 * three one-line calls added where decoded bytes are produced, and counts them against the document's
 * expansion limit (src/knowledge/expansion-limit.ts) while they are produced:
 *
 * - `DecodeStream.ensureBuffer(requested)`: every decoding stream (Flate, LZW, ASCII85, ASCIIHex,
 *   RunLength, CCITTFax, the PNG/TIFF predictors) grows its output buffer through it before writing the
 *   next block. The call reports the size the stream asks for; the hook counts how far each stream's
 *   request goes past its previous one (the bytes decoded, plus at most one block ahead).
 * - `asyncGetBytesFromDecompressionStream`: streams decoded by the platform's DecompressionStream (fonts,
 *   images) are collected chunk by chunk; each chunk is counted.
 * - The Brotli decoder (PDF 2.0 `/BrotliDecode`) decodes into 16 KiB blocks; each block is counted.
 *
 * The source is read from the installed package, patched in memory and imported from a `data:` URL; it
 * sets `globalThis.pdfjsWorker`, which pdf.js's API (`pdf.mjs`) uses instead of loading its own copy.
 * Every anchor must be found exactly once, or loading fails (a pdf.js upgrade that moved one must
 * be looked at, not silently left uncounted): see {@link instrumentPdfWorker}. pdfjs-dist is pinned
 * (package.json) for this reason.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** Where the instrumented pdf.js finds the hook: a registered symbol, the same in every module that asks. */
export const PDF_DECODE_HOOK = Symbol.for('parley.pdfjs.decoded');

/** What the instrumented pdf.js calls (on `globalThis[PDF_DECODE_HOOK]`, when set). May throw to stop decoding. */
export interface PdfDecodeHook {
  /** A decoding stream asks for an output buffer of `requested` bytes (DecodeStream.ensureBuffer). */
  grow(stream: object, requested: number): void;
  /** `bytes` more bytes were decoded in one piece (DecompressionStream chunk, Brotli block). */
  add(bytes: number): void;
}

const CALL = (method: string, args: string): string => `globalThis[Symbol.for("parley.pdfjs.decoded")]?.${method}(${args});`;

/**
 * The three insertions: after `anchor` (which must occur exactly once in the source), `insert`.
 * Written against pdfjs-dist 5.6.205 (legacy build).
 */
export const PDF_WORKER_PATCHES: ReadonlyArray<{ name: string; anchor: string; insert: string }> = [
  {
    name: 'DecodeStream.ensureBuffer',
    anchor: '  ensureBuffer(requested) {\n    const buffer = this.buffer;\n',
    insert: `    ${CALL('grow', 'this, requested')}\n`,
  },
  {
    name: 'asyncGetBytesFromDecompressionStream',
    anchor: '        chunks.push(chunk);\n        totalLength += chunk.byteLength;\n',
    insert: `        ${CALL('add', 'chunk.byteLength')}\n`,
  },
  {
    name: 'BrotliDecode',
    anchor: '      totalOutput += s.outputUsed;\n',
    insert: `      ${CALL('add', 's.outputUsed')}\n`,
  },
];

/**
 * `source` (pdf.js's pdf.worker.mjs) with the hook calls of {@link PDF_WORKER_PATCHES} inserted.
 *
 * @throws Error naming the patch whose anchor is missing or found more than once.
 */
export function instrumentPdfWorker(source: string): string {
  let out = source;
  for (const patch of PDF_WORKER_PATCHES) {
    const at = out.indexOf(patch.anchor);
    if (at < 0 || out.indexOf(patch.anchor, at + 1) >= 0) {
      throw new Error(`cannot count the bytes pdf.js decodes: the ${patch.name} anchor is ${at < 0 ? 'missing' : 'not unique'} in pdf.worker.mjs (pdfjs-dist changed?)`);
    }
    const end = at + patch.anchor.length;
    out = out.slice(0, end) + patch.insert + out.slice(end);
  }
  return out;
}

let loaded: Promise<void> | undefined;

/**
 * Loads the instrumented pdf.js core once per process (later calls share the first load) and installs it
 * as `globalThis.pdfjsWorker`. Call before the first `getDocument`.
 *
 * @throws Error when pdf.worker.mjs cannot be read or an anchor is missing (see {@link instrumentPdfWorker}).
 */
export function loadInstrumentedPdfWorker(): Promise<void> {
  loaded ??= (async () => {
    const file = createRequire(import.meta.url).resolve('pdfjs-dist/legacy/build/pdf.worker.mjs');
    const source = instrumentPdfWorker(readFileSync(file, 'utf8'));
    // The module sets globalThis.pdfjsWorker = { WorkerMessageHandler } when it is evaluated.
    await import(`data:text/javascript;base64,${Buffer.from(source).toString('base64')}`);
    if (typeof (globalThis as { pdfjsWorker?: { WorkerMessageHandler?: unknown } }).pdfjsWorker?.WorkerMessageHandler !== 'function') {
      throw new Error('the instrumented pdf.js worker did not install globalThis.pdfjsWorker');
    }
  })();
  return loaded;
}

/**
 * A {@link PdfDecodeHook} that counts into `take` (an ExpansionBudget's `take`, which throws past the
 * limit): `grow` counts how far each stream's request goes past its own previous request.
 */
export function countingHook(take: (bytes: number) => void): PdfDecodeHook {
  const requested = new WeakMap<object, number>();
  return {
    grow(stream, size) {
      const before = requested.get(stream) ?? 0;
      if (size <= before) return;
      requested.set(stream, size);
      take(size - before);
    },
    add(bytes) {
      take(bytes);
    },
  };
}
