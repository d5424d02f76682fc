/**
 * The expansion limit of one document (PARLEY_INGEST_MAX_EXPANDED_BYTES, docs/knowledge-bases.md
 * "Document size limits"): how many bytes a document may decompress to (the zip entries of a DOCX, the
 * decoded streams of a PDF) and how many characters of text may be extracted from it (every format).
 * Counted while the data is produced, so that a decompression bomb (a few MB that inflate to GBs) stops
 * at the limit instead of at the end; never read from sizes a file declares (a zip directory's sizes
 * and a PDF's /Length are the attacker's to choose).
 *
 * Runs inside the ingestion process (src/knowledge/ingest.worker.ts); no imports, so that it costs the
 * process nothing to load.
 */

/** Default of PARLEY_INGEST_MAX_EXPANDED_BYTES: 128 MiB, 12.8 times the default upload limit (10 MiB). */
export const DEFAULT_MAX_EXPANDED_BYTES = 128 * 1024 * 1024;

/** A document past its expansion limit: the message is the document's `error`, its code `document_too_large`. */
export class DocumentTooLargeError extends Error {
  override readonly name = 'DocumentTooLargeError';
}

/** What an {@link ExpansionBudget} counts: decompressed bytes, or characters of extracted text. */
export type ExpansionKind = 'decompressed bytes' | 'text characters';

/**
 * A running count of one kind of expansion against a limit. `take` adds and throws once the total passes
 * the limit; every later `take` throws the same error again, so code that swallowed the first throw (pdf.js
 * recovers from errors inside a content stream) fails again at once, and {@link exceeded} still tells.
 */
export class ExpansionBudget {
  #used = 0;
  #exceeded: DocumentTooLargeError | undefined;

  /**
   * @param limit most units allowed, an integer >= 0.
   * @param kind what is counted (it names the unit in the error message).
   * @throws RangeError when `limit` is not an integer >= 0.
   */
  constructor(readonly limit: number, readonly kind: ExpansionKind) {
    if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`expansion limit must be an integer >= 0, got ${String(limit)}`);
  }

  /** Units counted so far. */
  get used(): number {
    return this.#used;
  }

  /** The error once the limit was passed, else undefined. */
  get exceeded(): DocumentTooLargeError | undefined {
    return this.#exceeded;
  }

  /**
   * Counts `units` more (a negative or non-finite count is ignored).
   *
   * @throws DocumentTooLargeError when the total passes the limit (and on every call after that):
   *   `document expands to more than N decompressed bytes (the ingestion expansion limit)`.
   */
  take(units: number): void {
    if (this.#exceeded !== undefined) throw this.#exceeded;
    if (!(units > 0) || !Number.isFinite(units)) return;
    this.#used += units;
    if (this.#used > this.limit) {
      this.#exceeded = new DocumentTooLargeError(`document expands to more than ${this.limit} ${this.kind} (the ingestion expansion limit)`);
      throw this.#exceeded;
    }
  }
}
