/**
 * Files as documents (API.md "Knowledge bases"): the Content-Type a file is uploaded with and the title it
 * gets. No DOM, so it is tested in Node (test/unit/builder-logic.test.ts).
 */

/** The media types the API ingests, by file extension (browsers leave `File.type` empty for .md). */
const TYPES: Record<string, string> = {
  md: 'text/markdown', markdown: 'text/markdown', txt: 'text/plain', text: 'text/plain', html: 'text/html', htm: 'text/html',
  pdf: 'application/pdf', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

/** What `<input accept>` offers: the extensions above. */
export const ACCEPTED = Object.keys(TYPES).map((ext) => `.${ext}`).join(',');

/** The Content-Type to upload `file` with: by its extension, else what the browser says, else octet-stream (refused with 415). */
export function contentTypeOf(file: { name: string; type: string }): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(file.name)?.[1]?.toLowerCase() ?? '';
  return TYPES[ext] ?? (file.type !== '' ? file.type : 'application/octet-stream');
}

/** A document's title from its file name: the name without its extension ("Refund policy.pdf" -> "Refund policy"). */
export function titleOf(fileName: string): string {
  const title = fileName.replace(/\.[A-Za-z0-9]+$/, '').trim();
  return (title === '' ? fileName : title).slice(0, 300);
}
