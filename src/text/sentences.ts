/**
 * The one sentence splitter: used by chunking (knowledge ingestion) and by the builtin model when it
 * picks sentences to quote. Pure; linear time in the text length.
 */

/** A sentence of a text: `text` (trimmed; indentation after a line break kept), its start offset, and `sep`. */
export interface SentenceSpan {
  text: string;
  /** Whitespace that separated it from the previous sentence: '', ' ', '\n' or '\n\n'. */
  sep: string;
  /** Offset of `text` in the input, UTF-16 code units. */
  start: number;
}

/**
 * Splits text into sentences, each with the whitespace that separated it from the previous one
 * (normalised to '', ' ', '\n' or '\n\n'; '' for the first). A sentence ends at `.`, `!`, `?` or `…`
 * (plus closing quotes/brackets) followed by whitespace and a character that is not a lower-case
 * letter (so `e.g. foo` and `fs.readFile()` stay whole), at CJK full stops, and at every line break.
 * Runs in linear time.
 */
export function splitSentences(text: string): { text: string; sep: string }[] {
  return sentenceSpans(text).map(({ text: t, sep }) => ({ text: t, sep }));
}

/** {@link splitSentences} with each sentence's start offset in `text`. Linear time. */
export function sentenceSpans(text: string): SentenceSpan[] {
  const out: SentenceSpan[] = [];
  const boundary = /[.!?\u2026]["'\u2019\u201d)\]`*_]*([ \t]+)(?=[^\sa-z])|[\u3002\uff01\uff1f]([ \t]*)|[ \t]*(\n(?:[ \t]*\n)*)/g;
  let start = 0;
  let sep = '';
  const emit = (from: number, to: number): void => {
    let slice = text.slice(from, to).trimEnd();
    let offset = from;
    if (!sep.includes('\n')) {
      const trimmed = slice.trimStart();
      offset += slice.length - trimmed.length;
      slice = trimmed;
    }
    if (slice.trim().length > 0) out.push({ text: slice, sep: out.length === 0 ? '' : sep, start: offset });
  };
  let match: RegExpExecArray | null;
  while ((match = boundary.exec(text)) !== null) {
    const whitespace = match[1] ?? match[2] ?? match[3] ?? '';
    const end = match.index + match[0].length - whitespace.length;
    const before = out.length;
    emit(start, end);
    if (out.length > before) sep = normaliseSeparator(whitespace);
    else if (out.length > 0 && whitespace.includes('\n') && sep !== '\n\n') sep = normaliseSeparator(whitespace);
    start = match.index + match[0].length;
    if (match[0].length === 0) boundary.lastIndex++;
  }
  emit(start, text.length);
  return out;
}

function normaliseSeparator(whitespace: string): string {
  const newlines = (whitespace.match(/\n/g) ?? []).length;
  if (newlines >= 2) return '\n\n';
  if (newlines === 1) return '\n';
  return whitespace.length > 0 ? ' ' : '';
}

