/**
 * Broken and odd document files for the knowledge-format tests, made at test time from the checked-in
 * fixtures (test/fixtures, made by scripts/make-fixtures.mjs) or from scratch.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import { PDFDocument, PDFHexString, StandardFonts } from 'pdf-lib';

export const FIXTURES = resolve(import.meta.dirname, '..', 'fixtures');

/** The checked-in PDF (docs/operations.md on several pages). */
export const fixturePdf = (): Uint8Array => new Uint8Array(readFileSync(join(FIXTURES, 'operations.pdf')));
/** The checked-in DOCX (docs/agents-and-models.md with Heading 1-3 styles). */
export const fixtureDocx = (): Uint8Array => new Uint8Array(readFileSync(join(FIXTURES, 'agents-and-models.docx')));

/** The first half of the fixture PDF: no cross-reference table, no trailer. */
export function truncatedPdf(): Uint8Array {
  const pdf = fixturePdf();
  return pdf.slice(0, Math.floor(pdf.length / 2));
}

/**
 * A one-page PDF whose trailer names a Standard security handler (PDF 32000-1 section 7.6.3, revision 2)
 * with a user password that the empty password does not open: readers must ask for a password.
 * pdf-lib cannot encrypt content, so the page itself is plain; the /Encrypt entry is what counts.
 */
export async function encryptedPdf(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  pdf.addPage().drawText('The vault code is on this page.', { x: 50, y: 700, size: 12, font });
  const encrypt = pdf.context.obj({
    Filter: 'Standard', V: 1, R: 2, P: -4,
    O: PDFHexString.of('00'.repeat(32)), U: PDFHexString.of('11'.repeat(32)),
  });
  pdf.context.trailerInfo.Encrypt = pdf.context.register(encrypt);
  pdf.context.trailerInfo.ID = pdf.context.obj([PDFHexString.of('ab'.repeat(16)), PDFHexString.of('ab'.repeat(16))]);
  return pdf.save({ useObjectStreams: false });
}

/** `n` bytes of a fixed pseudo-random sequence (xorshift32), the same on every run. */
export function randomBytes(n: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/**
 * A valid zip archive (stored entries, APPNOTE.TXT 6.3 sections 4.3.7, 4.3.12 and 4.3.16) holding the
 * given files: a zip, but not a Word document.
 */
export function zipOf(files: Record<string, string>): Uint8Array {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const nameBytes = Buffer.from(name, 'utf8');
    const data = Buffer.from(text, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    locals.push(local, nameBytes, data);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return new Uint8Array(Buffer.concat([...locals, ...centrals, end]));
}

/** A web page with navigation, scripts, styles, a footer and an article of two headed sections. */
export const HTML_PAGE = `<!doctype html>
<html lang="en"><head><title>Loyalty programme</title>
<style>body { font-family: serif } .nav { color: red }</style>
<script>window.trackingPixel = "spyware-beacon-load";</script>
</head><body>
<nav class="nav"><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/menu">Navigation menu entry</a></nav>
<header><p>Site banner with the sitewide-header slogan</p></header>
<main><article>
<h1>Loyalty programme</h1>
<p>Members of the loyalty programme collect one stamp for every coffee they buy at any of our cafes.
A card with ten stamps is exchanged for a free pastry of the member's choice at the counter.</p>
<h2>Expiry of stamps</h2>
<p>Stamps expire eighteen months after the day they were collected. The receipt shows the expiry date
of the oldest stamp on the card, and the app shows every stamp with its own date.</p>
<ul><li>Stamps cannot be exchanged for cash.</li><li>Lost cards are replaced at the counter.</li></ul>
<script>document.write("inline-script-text")</script>
</article></main>
<footer><p>Copyright footer-boilerplate text</p></footer>
</body></html>`;
