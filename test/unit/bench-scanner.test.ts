import { describe, expect, it } from 'vitest';
import { Scanner } from '../../bench/lib/raw-client.js';

/** Feeds `text` to a scanner cut at `cuts` and returns the total count per pattern. */
function countSplit(patterns: string[], text: string, cuts: number[], seed?: string): number[] {
  const s = new Scanner(patterns);
  if (seed) s.seed(seed);
  const total = patterns.map(() => 0);
  const out: number[] = [];
  let from = 0;
  for (const to of [...cuts, text.length]) {
    s.scan(Buffer.from(text.slice(from, to), 'latin1'), out);
    out.forEach((n, i) => { total[i]! += n; });
    from = to;
  }
  return total;
}

describe('bench byte scanner (token frames counted across reads)', () => {
  const frame = 'id: t:1\ndata: {"type":"token","delta":"tok "}\n\n';
  const body = `${frame.repeat(5)}data: {"type":"done"}\n\n\r\n0\r\n\r\n`;
  const pats = ['"type":"token"', 'data: ', '"type":"done"', '\r\n0\r\n\r\n'];

  it('counts each occurrence once whatever the read boundaries', () => {
    const expected = [5, 6, 1, 1];
    expect(countSplit(pats, body, [])).toEqual(expected);
    for (let cut = 1; cut < body.length; cut++) expect(countSplit(pats, body, [cut])).toEqual(expected);
    // Every byte in its own read.
    expect(countSplit(pats, body, Array.from({ length: body.length - 1 }, (_, i) => i + 1))).toEqual(expected);
    // Irregular reads.
    expect(countSplit(pats, body, [3, 4, 17, 18, 19, 60, 61, 140, 141, 142, 200])).toEqual(expected);
  });

  it('a seed lets a pattern start before the first chunk', () => {
    expect(countSplit(['\r\n0\r\n\r\n'], '0\r\n\r\n', [], '\r\n')).toEqual([1]);
    expect(countSplit(['\r\n0\r\n\r\n'], '0\r\n\r\n', [1, 3], '\r\n')).toEqual([1]);
    expect(countSplit(['\r\n0\r\n\r\n'], '0\r\n\r\n', [])).toEqual([0]);
  });

  it('does not count a short pattern twice when it sits inside the kept tail', () => {
    expect(countSplit(['ab', 'xxxxxxxxxxxxxxxxxxxx'], 'zzzab', ['zzzab'.length - 1].concat([]))).toEqual([1, 0]);
    expect(countSplit(['ab', 'xxxxxxxxxxxxxxxxxxxx'], 'ab' + 'c'.repeat(3), [2, 3, 4])).toEqual([1, 0]);
  });
});
