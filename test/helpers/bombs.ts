/**
 * Decompression bombs for the ingestion tests (issue 35, finding 2): small files that expand to
 * gigabytes. Made at test time in well under a second each, never checked in.
 *
 * The expansion is a run of one byte value. Deflating a run of one value reaches deflate's ratio
 * ceiling (about 1030:1: 258-byte matches of 1 or 2 bits each), so a few MB hold GBs. The compressed run
 * is made once for {@link RUN_BYTES} and repeated: a raw deflate stream compressed with a full flush
 * (RFC 1951 blocks without BFINAL, then an empty stored block that aligns the stream to a byte) can be
 * followed by any other such stream, so N copies of it decode to N runs.
 */
import { constants, deflateRawSync } from 'node:zlib';
import { PDFDict, PDFDocument, PDFName, PDFNumber, PDFRawStream, StandardFonts } from 'pdf-lib';

/** Bytes of one compressed run (16 MiB); a bomb's expanded size is a multiple of it plus its prefix and suffix. */
export const RUN_BYTES = 16 * 1024 * 1024;

/** A raw deflate stream without its last block (full flush: byte-aligned, no BFINAL), for concatenation. */
function deflateOpen(data: Buffer): Buffer {
  return deflateRawSync(data, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
}

/**
 * A raw deflate stream (RFC 1951) that decodes to `prefix`, then `runs` x {@link RUN_BYTES} bytes of
 * `fill`, then `suffix`. Returns the compressed bytes and the expanded size.
 */
export function deflatedRun(prefix: string, fill: string, runs: number, suffix: string): { deflated: Buffer; expandedBytes: number } {
  const run = deflateOpen(Buffer.alloc(RUN_BYTES, fill));
  const parts = [deflateOpen(Buffer.from(prefix)), ...Array.from({ length: runs }, () => run), deflateRawSync(Buffer.from(suffix))];
  return { deflated: Buffer.concat(parts), expandedBytes: Buffer.byteLength(prefix) + runs * RUN_BYTES + Buffer.byteLength(suffix) };
}

interface ZipEntry {
  name: string;
  /** Stored bytes: the data itself (method 0) or its raw deflate stream (method 8). */
  stored: Buffer;
  method: 0 | 8;
  /** The uncompressed size the zip headers declare: attacker-controlled, so not necessarily true. */
  declaredSize: number;
}

/**
 * A zip archive (APPNOTE.TXT 6.3: local headers 4.3.7, central directory 4.3.12, end record 4.3.16) of
 * `entries`. The CRC-32 fields are 0: neither JSZip (which does not check them by default) nor a bounded
 * reader (which stops before the end) gets to compare them.
 */
function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.method, 8);
    local.writeUInt32LE(e.stored.length, 18);
    local.writeUInt32LE(e.declaredSize, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, e.stored);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(e.method, 10);
    central.writeUInt32LE(e.stored.length, 20);
    central.writeUInt32LE(e.declaredSize, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += 30 + name.length + e.stored.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

const CONTENT_TYPES_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
  + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
  + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
  + '<Default Extension="xml" ContentType="application/xml"/>'
  + '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
  + '</Types>';
const RELS_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
  + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
  + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
  + '</Relationships>';
const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/** A DOCX of `paragraph` as its one paragraph, every part stored uncompressed: a well-formed Word document. */
export function smallDocx(paragraph: string): Buffer {
  const doc = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="${W}"><w:body><w:p><w:r><w:t>${paragraph}</w:t></w:r></w:p></w:body></w:document>`;
  return zip([
    { name: '[Content_Types].xml', stored: Buffer.from(CONTENT_TYPES_XML), method: 0, declaredSize: Buffer.byteLength(CONTENT_TYPES_XML) },
    { name: '_rels/.rels', stored: Buffer.from(RELS_XML), method: 0, declaredSize: Buffer.byteLength(RELS_XML) },
    { name: 'word/document.xml', stored: Buffer.from(doc), method: 0, declaredSize: Buffer.byteLength(doc) },
  ]);
}

/**
 * A DOCX bomb: `word/document.xml` is one paragraph whose text is `runs` x 16 MiB of the letter `a`
 * (the review's: 3.5 GB of one letter in a 3.5 MB file, `runs` = 209). The zip directory lies: it declares
 * `declaredSize` bytes for the part (default 4096), so only counting while inflating finds its size.
 */
export function docxBomb(runs: number, declaredSize = 4096): { file: Buffer; expandedBytes: number } {
  const { deflated, expandedBytes } = deflatedRun(
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="${W}"><w:body><w:p><w:r><w:t>`,
    'a', runs, '</w:t></w:r></w:p></w:body></w:document>',
  );
  const file = zip([
    { name: '[Content_Types].xml', stored: Buffer.from(CONTENT_TYPES_XML), method: 0, declaredSize: Buffer.byteLength(CONTENT_TYPES_XML) },
    { name: '_rels/.rels', stored: Buffer.from(RELS_XML), method: 0, declaredSize: Buffer.byteLength(RELS_XML) },
    { name: 'word/document.xml', stored: deflated, method: 8, declaredSize },
  ]);
  return { file, expandedBytes };
}

/**
 * A PDF bomb: one page whose content stream (FlateDecode, a zlib stream: RFC 1950 header, the deflate
 * data, a zero Adler-32 that pdf.js does not check) draws one line of text, then holds `runs` x 16 MiB of
 * spaces (the review's: a 1.5 MB PDF with a 1.5 GB content stream, `runs` = 90). Made with pdf-lib.
 * The spaces are no text: a reader that decodes the whole stream finds one short line, so a PDF bomb is
 * `ready` where nothing bounds the decoding.
 */
export async function pdfBomb(runs: number): Promise<{ file: Uint8Array; expandedBytes: number }> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage();
  page.drawText('x', { x: 50, y: 700, size: 12, font }); // registers the font in the page's resources
  const fontName = page.node.Resources()!.lookup(PDFName.of('Font'), PDFDict).keys()[0]!.asString().slice(1);
  const { deflated, expandedBytes } = deflatedRun(`BT /${fontName} 12 Tf 72 712 Td (A page of a decompression bomb.) Tj ET\n`, ' ', runs, '\n');
  const zlibStream = Buffer.concat([Buffer.from([0x78, 0xda]), deflated, Buffer.alloc(4)]);
  const dict = pdf.context.obj({ Filter: 'FlateDecode', Length: PDFNumber.of(zlibStream.length) });
  const contents = pdf.context.register(PDFRawStream.of(dict, zlibStream));
  page.node.set(PDFName.of('Contents'), contents);
  return { file: await pdf.save({ useObjectStreams: false }), expandedBytes };
}

/**
 * A PDF of `pages` pages that all draw one short line from one shared content stream (the review's slow
 * document: a 58k-page PDF, a few MB), written by hand: every page costs a reader a page tree lookup, a
 * content stream parse and a text extraction.
 */
export function manyPagesPdf(pages: number): Buffer {
  const objects: string[] = [];
  const kids = Array.from({ length: pages }, (_, i) => `${i + 5} 0 R`).join(' ');
  const content = 'BT /F1 12 Tf 72 712 Td (One of many pages of a long report.) Tj ET';
  objects.push('<< /Type /Catalog /Pages 2 0 R >>');
  objects.push(`<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`);
  objects.push(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  for (let i = 0; i < pages; i++) objects.push('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>');
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** HTML of `depth` nested `<div>` elements around one sentence (the review's slow document: 9 MB of nested HTML). */
export function nestedHtml(depth: number): Buffer {
  return Buffer.from(`<html><body>${'<div>'.repeat(depth)}A sentence at the bottom of the nesting.${'</div>'.repeat(depth)}</body></html>`);
}
