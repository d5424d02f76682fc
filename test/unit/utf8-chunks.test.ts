import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { completeLength, Utf8ChunkDecoder } from '../../src/models/openai/utf8-chunks.js';

/** Decodes `bytes` cut at `cuts` (sorted byte offsets) with a fresh decoder: every decode's text, then end()'s. */
function decodeInPieces(bytes: Buffer, cuts: number[]): string[] {
  const decoder = new Utf8ChunkDecoder();
  const out: string[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(decoder.decode(bytes.subarray(from, cut)));
    from = cut;
  }
  out.push(decoder.end());
  return out;
}

/** The reference: WHATWG's streaming TextDecoder on the same pieces. */
function referenceInPieces(bytes: Buffer, cuts: number[]): string[] {
  const decoder = new TextDecoder('utf-8');
  const out: string[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(decoder.decode(bytes.subarray(from, cut), { stream: true }));
    from = cut;
  }
  out.push(decoder.decode());
  return out;
}

describe('completeLength', () => {
  it('holds back only the start of a character that more bytes can complete', () => {
    const euro = Buffer.from('€'); // E2 82 AC
    const smile = Buffer.from('😀'); // F0 9F 98 80
    const e = Buffer.from('é'); // C3 A9
    expect(completeLength(Buffer.from('abc'))).toBe(3);
    expect(completeLength(Buffer.alloc(0))).toBe(0);
    expect(completeLength(Buffer.concat([Buffer.from('a'), euro]))).toBe(4);
    expect(completeLength(Buffer.concat([Buffer.from('a'), euro.subarray(0, 1)]))).toBe(1);
    expect(completeLength(Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)]))).toBe(1);
    expect(completeLength(Buffer.concat([Buffer.from('ab'), e.subarray(0, 1)]))).toBe(2);
    expect(completeLength(Buffer.concat([Buffer.from('a'), smile]))).toBe(5);
    expect(completeLength(Buffer.concat([Buffer.from('a'), smile.subarray(0, 3)]))).toBe(1);
    expect(completeLength(Buffer.concat([Buffer.from('a'), smile.subarray(0, 1)]))).toBe(1);
    expect(completeLength(smile.subarray(0, 2))).toBe(0);
    // Continuation bytes with no lead byte within reach are malformed, not incomplete: nothing is held.
    expect(completeLength(Buffer.from([0x61, 0x80, 0x80, 0x80]))).toBe(4);
    expect(completeLength(Buffer.from([0x80]))).toBe(1);
  });
});

describe('Utf8ChunkDecoder', () => {
  it('gives each character with the chunk that completes it, as a streaming TextDecoder does', () => {
    const bytes = Buffer.from('a€b😀é');
    // Every two-piece split.
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(decodeInPieces(bytes, [cut])).toEqual(referenceInPieces(bytes, [cut]));
    }
    // One byte at a time: the 4-byte character comes out whole, with its last byte.
    const oneByOne = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    const pieces = decodeInPieces(bytes, oneByOne);
    expect(pieces.join('')).toBe('a€b😀é');
    expect(pieces).toEqual(['a', '', '', '€', 'b', '', '', '', '😀', '', 'é', '']);
  });

  it('drops one leading byte order mark, even when it arrives a byte at a time, and keeps later ones', () => {
    const bytes = Buffer.from('\ufeffdata: \ufeffx\n');
    expect(decodeInPieces(bytes, []).join('')).toBe('data: \ufeffx\n');
    expect(decodeInPieces(bytes, [1, 2]).join('')).toBe('data: \ufeffx\n');
    const twice = Buffer.from('\ufeff\ufeffy');
    expect(decodeInPieces(twice, [3]).join('')).toBe('\ufeffy');
  });

  it('turns an incomplete character at the end into U+FFFD', () => {
    const bytes = Buffer.concat([Buffer.from('ok'), Buffer.from('😀').subarray(0, 2)]);
    expect(decodeInPieces(bytes, [])).toEqual(['ok', '\ufffd']);
    const decoder = new Utf8ChunkDecoder();
    expect(decoder.end()).toBe('');
  });

  it('does not keep the chunk it was given (the held bytes are a copy)', () => {
    const decoder = new Utf8ChunkDecoder();
    const chunk = Buffer.concat([Buffer.from('x'), Buffer.from('€').subarray(0, 2)]);
    expect(decoder.decode(chunk)).toBe('x');
    chunk.fill(0x41); // the socket reuses its read buffer
    expect(decoder.decode(Buffer.from('€').subarray(2))).toBe('€');
  });

  it('matches a streaming TextDecoder on any text cut anywhere', () => {
    fc.assert(fc.property(
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.array(fc.nat(), { maxLength: 6 }),
      (text, rawCuts) => {
        const bytes = Buffer.from(text, 'utf8');
        const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        expect(decodeInPieces(bytes, cuts)).toEqual(referenceInPieces(bytes, cuts));
      },
    ), { numRuns: 500 });
  });

  it('decodes malformed bytes to the same text as TextDecoder, wherever the cuts fall', () => {
    fc.assert(fc.property(
      fc.uint8Array({ maxLength: 24 }),
      fc.array(fc.nat(), { maxLength: 5 }),
      (raw, rawCuts) => {
        const bytes = Buffer.from(raw);
        const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        expect(decodeInPieces(bytes, cuts).join('')).toBe(referenceInPieces(bytes, cuts).join(''));
      },
    ), { numRuns: 1000 });
  });
});
