import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createParser } from 'eventsource-parser';
import { SseDataParser, SseEventTooLarge } from '../../src/models/openai/sse-data-parser.js';

/** Feeds `pieces` to a fresh parser; the data of every event, in order. */
function parse(pieces: string[], maxChars = 1_000_000): string[] {
  const parser = new SseDataParser(maxChars);
  const out: string[] = [];
  const sink = { onEvent: (data: string) => { out.push(data); } };
  for (const piece of pieces) parser.feed(piece, sink);
  return out;
}

/** The reference: eventsource-parser (a maintained implementation of the same section of the standard). */
function reference(pieces: string[]): string[] {
  const out: string[] = [];
  const parser = createParser({ onEvent: (ev) => { out.push(ev.data); } });
  for (const piece of pieces) parser.feed(piece);
  return out;
}

/** `text` cut at `cuts` (any offsets, deduplicated and sorted). */
function cut(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const c of at) {
    pieces.push(text.slice(from, c));
    from = c;
  }
  pieces.push(text.slice(from));
  return pieces;
}

describe('SseDataParser', () => {
  it('dispatches each event at its empty line, with its data lines joined by LF', () => {
    expect(parse(['data: {"a":1}\n\ndata: x\ndata:y\ndata\n\n'])).toEqual(['{"a":1}', 'x\ny\n']);
  });

  it('accepts LF, CRLF and CR line ends, also when CR and LF arrive in different pieces', () => {
    expect(parse(['data: a\r\n\r\ndata: b\r\rdata: c\n\n'])).toEqual(['a', 'b', 'c']);
    expect(parse(['data: a\r', '\n', '\r', '\ndata: b\r', '\r'])).toEqual(['a', 'b']);
    // An empty piece between the CR and the LF changes nothing.
    expect(parse(['data: a\r', '', '\n', 'data: b\n\n'])).toEqual(['a\nb']);
    // A CR at the end of a piece followed by a piece that does not start with LF: two line ends.
    expect(parse(['data: a\r', 'data: b\n\n'])).toEqual(['a\nb']);
  });

  it('ends a line at a CR that ends a piece at once, without waiting to see whether an LF follows', () => {
    // eventsource-parser keeps such a line until its next piece; the standard makes a CR a line end of its own.
    expect(parse(['data: now\r\r'])).toEqual(['now']);
    expect(reference(['data: now\r\r'])).toEqual([]);
  });

  it('drops one space after the colon only, and reads `data` with no colon as an empty line of data', () => {
    expect(parse(['data:  two spaces\n\n', 'data:\n\n', 'data\n\n'])).toEqual([' two spaces', '', '']);
  });

  it('skips comments, other fields and lines that only start like data', () => {
    expect(parse([': keep-alive\nevent: message\nid: 7\nretry: 10\ndatum: no\ndata2: no\ndat\nDATA: no\ndata: yes\n\n'])).toEqual(['yes']);
    // An empty line with no data dispatches nothing.
    expect(parse(['\n\n: ping\n\nevent: x\n\n'])).toEqual([]);
  });

  it('keeps an unterminated last event undispatched', () => {
    expect(parse(['data: done\n\ndata: cut'])).toEqual(['done']);
    expect(parse(['data: done\n\ndata: cut\n'])).toEqual(['done']);
  });

  it('joins a line that arrives in many pieces', () => {
    const pieces = 'data: {"choices":[{"delta":{"content":"héllo"}}]}\n\n'.split('');
    expect(parse(pieces)).toEqual(['{"choices":[{"delta":{"content":"héllo"}}]}']);
  });

  it('fails past its bound, counting a partial line and the data held, and is then empty', () => {
    const parser = new SseDataParser(10);
    const out: string[] = [];
    const sink = { onEvent: (d: string) => { out.push(d); } };
    parser.feed('data: 1234\n', sink); // 4 characters of data held
    parser.feed('data: ', sink); // + a partial line of 6: 10, at the bound
    expect(() => parser.feed('x', sink)).toThrow(SseEventTooLarge); // 11
    // Nothing of the partial line or of the held data is left: the next line starts afresh.
    parser.feed('data: ok\n\n', sink);
    expect(out).toEqual(['ok']);
    expect(() => new SseDataParser(4).feed('data: 12345', sink)).toThrow('longer than 4 characters');
    // Exactly at the bound is fine.
    expect(() => new SseDataParser(5).feed('data:', sink)).not.toThrow();
  });

  it('lets an error of the sink through and parses the rest on the next call', () => {
    const parser = new SseDataParser(1000);
    const seen: string[] = [];
    const sink = { onEvent: (d: string) => { if (d === 'bad') throw new Error('consumer broke'); seen.push(d); } };
    expect(() => parser.feed('data: bad\n\ndata: skipped\n\n', sink)).toThrow('consumer broke');
    parser.feed('data: next\n\n', sink);
    expect(seen).toEqual(['next']);
  });

  it('finds the same events as eventsource-parser in any stream cut anywhere', () => {
    const line = fc.oneof(
      fc.constant(''),
      fc.string({ maxLength: 12 }).map((v) => `data: ${v}`),
      fc.string({ maxLength: 12 }).map((v) => `data:${v}`),
      fc.constant('data'),
      fc.string({ maxLength: 8 }).map((v) => `: ${v}`),
      fc.string({ maxLength: 8 }).map((v) => `event: ${v}`),
      fc.constant('id: 1'),
      fc.constant('retry: 5'),
      fc.string({ maxLength: 8 }).map((v) => `data2: ${v}`),
    ).map((l) => l.replace(/[\r\n]/g, ' '));
    const lineEnd = fc.constantFrom('\n', '\r\n', '\r');
    fc.assert(fc.property(
      fc.array(fc.tuple(line, lineEnd), { maxLength: 16 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      (lines, cuts) => {
        const text = lines.map(([l, e]) => l + e).join('');
        // A final LF: eventsource-parser holds a CR that ends its input until it sees what follows (see the
        // test above); after it, both have seen every line end.
        const pieces = [...cut(text, cuts), '\n'];
        expect(parse(pieces)).toEqual(reference(pieces));
      },
    ), { numRuns: 2000 });
  });
});
