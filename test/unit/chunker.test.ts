import { beforeAll, describe, it, expect } from 'vitest';
import { chunkSections, type ChunkOptions } from '../../src/knowledge/chunker.js';
import { splitSentences } from '../../src/text/sentences.js';
import { markdownNestingDepth, parseDocument, type Section } from '../../src/knowledge/parse-document.js';

/** A run of distinct, numbered sentences (about 60 characters each). */
function sentences(prefix: string, count: number): string {
  return Array.from({ length: count }, (_, i) => `The ${prefix} sentence number ${i + 1} explains one more detail.`).join(' ');
}

const MARKDOWN = `# Crypto

<!--introduced_in=v0.3.6-->

> Stability: 2 - Stable

<!-- source_link=lib/crypto.js -->

The \`node:crypto\` module provides **cryptographic** functionality, see [the guide](https://example.com/guide "Guide")
and [\`createHash()\`][] for _details_. It wraps OpenSSL &amp; friends.

## Class: \`Hash\`

<!-- YAML
added: v0.1.92
-->

The \`Hash\` class is a utility for creating hash digests of data. It can be used in one of two ways:
either as a stream that is both readable and writable, or through the update and digest methods.

* \`data\` {string|Buffer} The data.
* \`inputEncoding\` {string} The encoding.
  * nested item with *emphasis*

### \`hash.update(data[, inputEncoding])\`

Updates the hash content with the given data. This can be called many times with new data as it is
streamed.

\`\`\`mjs
const { createHash } = await import('node:crypto');
const hash = createHash('sha256');
\`\`\`

| Algorithm | Output |
| --------- | ------ |
| \`sha256\` | 32 bytes |

#### Deep heading

Text in a fourth-level section that should keep the top-level heading and the two deepest ones.

![diagram of the flow](https://example.com/img.png)

[\`createHash()\`]: https://nodejs.org/api/crypto.html#cryptocreatehashalgorithm-options
`;

describe('parseDocument (markdown)', () => {
  // Parsed in a hook, not while collecting: a parser that throws then fails the tests instead of
  // leaving the file with no tests (which a mutation run counts as surviving).
  let sections: Section[] = [];
  beforeAll(() => {
    sections = parseDocument(MARKDOWN, 'text/markdown');
  });

  it('builds heading paths of at most three levels without markup', () => {
    expect(sections.map((s) => s.heading)).toEqual([
      'Crypto',
      'Crypto > Class: Hash',
      'Crypto > Class: Hash > hash.update(data[, inputEncoding])',
      'Crypto > hash.update(data[, inputEncoding]) > Deep heading',
    ]);
  });

  it('strips markdown syntax, link targets and HTML comments, keeps code-span text', () => {
    const all = sections.flatMap((s) => s.paragraphs).join('\n\n');
    expect(all).not.toContain('#');
    expect(all).not.toContain('](');
    expect(all).not.toContain('<!--');
    expect(all).not.toContain('YAML');
    expect(all).not.toContain('*');
    expect(all).not.toContain('`');
    expect(all).not.toContain('https://');
    expect(all).toContain(
      'The node:crypto module provides cryptographic functionality, see the guide and createHash() for details. It wraps OpenSSL & friends.',
    );
    expect(all).toContain('Stability: 2 - Stable');
    expect(all).toContain('diagram of the flow');
  });

  it('turns lists, code and tables into line-structured paragraphs', () => {
    const hash = sections[1]?.paragraphs ?? [];
    expect(hash).toContain('data {string|Buffer} The data.\ninputEncoding {string} The encoding.\nnested item with emphasis');
    const update = sections[2]?.paragraphs ?? [];
    expect(update).toContain("const { createHash } = await import('node:crypto');\nconst hash = createHash('sha256');");
    expect(update).toContain('Algorithm | Output\nsha256 | 32 bytes');
  });

  it('keeps text before the first heading under the empty heading', () => {
    const result = parseDocument('Intro paragraph.\n\n# Title\n\nBody text.', 'text/markdown');
    expect(result).toEqual([
      { heading: '', paragraphs: ['Intro paragraph.'] },
      { heading: 'Title', paragraphs: ['Body text.'] },
    ]);
  });

  it.each([
    ['an escape', 'Use \\*not emphasis\\* here.', 'Use *not emphasis* here.'],
    ['inline HTML and an autolink', 'A <span>tagged</span> word and <https://a.example/x>.', 'A tagged word and https://a.example/x.'],
    ['a link and an image', 'See [the docs](https://a.example "T") and ![a chart](c.png).', 'See the docs and a chart.'],
    ['emphasis with stars', 'It is **very** *much* so.', 'It is very much so.'],
    ['emphasis with underscores', 'It is __very__ _much_ so.', 'It is very much so.'],
    ['a code span', 'Call `fs.open()` first.', 'Call fs.open() first.'],
    ['strikethrough', 'It is ~~old~~ new.', 'It is old new.'],
    ['plain text with a bare URL, an e-mail, an entity and a hard break', 'Mail me@a.example or see www.a.example &amp; more  \nnext line.', 'Mail me@a.example or see www.a.example & more next line.'],
    ['plain text with runs of spaces and a tab', 'Two  spaces\tand a tab.', 'Two spaces and a tab.'],
    ['plain text with a no-break space', 'A\u00a0B C.', 'A B C.'],
  ])('reduces a paragraph with %s to its text', (_label, markdown, text) => {
    expect(parseDocument(`# H\n\n${markdown}\n`, 'text/markdown')).toEqual([{ heading: 'H', paragraphs: [text] }]);
  });

  it('keeps the text of HTML tables, one row per line', () => {
    const html = '# T\n\n<table>\n  <tr><th>Constant</th><th>Description</th></tr>\n  <tr>\n    <td><code>SIGINT</code></td>\n    <td>Interrupt\n    (<kbd>Ctrl</kbd>+<kbd>C</kbd>).</td>\n  </tr>\n</table>\n';
    expect(parseDocument(html, 'text/markdown')).toEqual([
      { heading: 'T', paragraphs: ['Constant | Description\nSIGINT | Interrupt (Ctrl+C).'] },
    ]);
  });
});

describe('markdownNestingDepth', () => {
  it.each([
    ['plain paragraphs', 'Hello.\n\nWorld.', 0],
    ['one quote', '> quoted', 1],
    ['quotes on one line, with and without spaces', '> >> > x', 4],
    ['a list', '- a\n- b', 1],
    ['a nested list, 2-space indents', '- a\n  - b\n    - c', 3],
    ['an ordered list in a quote', '> 1. one\n> 2) two', 2],
    ['list markers on one line', '- - * + 12. x', 5],
    ['a thematic break counts its markers (upper bound)', '- - -', 3],
    ['rules, emphasis, numbers are not markers', '---\n**bold** *em*\n2024 was a year\n-1 degree', 0],
    ['a tab indent', '- a\n\t- b', 3],
    ['markers inside a fenced code block do not count', '```yaml\n' + '  '.repeat(100) + '- deep: yes\n```\n- after', 1],
    ['a tilde fence closed by a longer fence', '~~~\n> > > >\n~~~~\n> x', 1],
    ['CRLF line ends', '> a\r\n> > b\r\n', 2],
  ])('%s -> %i', (_label, text, depth) => {
    expect(markdownNestingDepth(text)).toBe(depth);
  });

  it('stops as soon as the depth passes stopAbove', () => {
    expect(markdownNestingDepth('> '.repeat(10_000) + 'x', 64)).toBe(65);
    expect(markdownNestingDepth('> '.repeat(10_000) + 'x')).toBe(10_000);
  });
});

describe('parseDocument (plain text)', () => {
  it('splits paragraphs on blank lines into one section with heading ""', () => {
    const text = 'First paragraph\nwrapped over lines.\r\n\r\n  \nSecond # paragraph.\n\n\n';
    expect(parseDocument(text, 'text/plain')).toEqual([
      { heading: '', paragraphs: ['First paragraph wrapped over lines.', 'Second # paragraph.'] },
    ]);
  });

  it('returns no sections for whitespace', () => {
    expect(parseDocument(' \n\n\t', 'text/plain')).toEqual([]);
  });
});

describe('splitSentences', () => {
  it('splits on sentence ends and line breaks, not inside identifiers or abbreviations', () => {
    expect(splitSentences('Use fs.readFile() here, e.g. when reading. Then 3.5 MB! Done?\nNext line').map((s) => s.text)).toEqual([
      'Use fs.readFile() here, e.g. when reading.',
      'Then 3.5 MB!',
      'Done?',
      'Next line',
    ]);
  });
});

describe('chunkSections', () => {
  const opts: ChunkOptions = { targetChars: 400, maxChars: 600, overlapChars: 150 };

  it('numbers chunks in order and carries the heading path', () => {
    const chunks = chunkSections(parseDocument(MARKDOWN, 'text/markdown'));
    expect(chunks.map((c) => c.ord)).toEqual(chunks.map((_, i) => i));
    expect(chunks.some((c) => c.heading === 'Crypto > Class: Hash > hash.update(data[, inputEncoding])')).toBe(true);
    for (const chunk of chunks) {
      expect(chunk.text).not.toContain('#');
      expect(chunk.text).not.toContain('](');
      expect(chunk.text).not.toContain('<!--');
      expect(chunk.text.trim()).toBe(chunk.text);
    }
  });

  it('never lets a chunk cross a section boundary', () => {
    const sections: Section[] = [
      { heading: 'A', paragraphs: [sentences('alpha', 6), sentences('beta', 6)] },
      { heading: 'B', paragraphs: [sentences('gamma', 6)] },
      { heading: 'C', paragraphs: [sentences('delta', 3)] },
    ];
    const chunks = chunkSections(sections, opts);
    for (const chunk of chunks) {
      const owner = sections.find((s) => s.heading === chunk.heading);
      expect(owner).toBeDefined();
      const present = ['alpha', 'beta', 'gamma', 'delta'].filter((word) => chunk.text.includes(word));
      expect(present.length).toBeGreaterThan(0);
      expect(present.filter((word) => !owner!.paragraphs.join(' ').includes(word))).toEqual([]);
    }
    expect(new Set(chunks.map((c) => c.heading))).toEqual(new Set(['A', 'B', 'C']));
  });

  it('overlaps consecutive chunks of one long section with whole sentences, not across sections', () => {
    const sections: Section[] = [
      { heading: 'Long', paragraphs: [sentences('first', 5), sentences('second', 5), sentences('third', 5), sentences('fourth', 5)] },
      { heading: 'Next', paragraphs: [sentences('other', 5)] },
    ];
    const chunks = chunkSections(sections, opts);
    const long = chunks.filter((c) => c.heading === 'Long');
    expect(long.length).toBeGreaterThan(1);
    for (let i = 1; i < long.length; i++) {
      const previous = long[i - 1]?.text ?? '';
      const current = long[i]?.text ?? '';
      const lastSentence = splitSentences(previous).at(-1)?.text ?? '<none>';
      expect(current.indexOf(lastSentence)).toBeGreaterThanOrEqual(0);
      expect(current.indexOf(lastSentence)).toBeLessThan(150);
      // The overlap is a suffix of the previous chunk made of whole sentences, within overlapChars.
      const overlapEnd = current.indexOf(lastSentence) + lastSentence.length;
      const overlap = current.slice(0, overlapEnd);
      expect(previous.endsWith(overlap)).toBe(true);
      expect(overlap.length).toBeLessThanOrEqual(150);
      expect(overlap).toMatch(/^The \w+ sentence number \d+ /);
      expect(previous.length).toBeGreaterThan(overlap.length);
    }
    const lastLong = long.at(-1)?.text ?? '';
    const firstNext = chunks.find((c) => c.heading === 'Next')?.text ?? '';
    expect(firstNext.startsWith('The other sentence number 1')).toBe(true);
    expect(firstNext).not.toContain(splitSentences(lastLong).at(-1)?.text ?? '<none>');
  });

  it('splits a paragraph longer than maxChars under maxChars, on sentence boundaries', () => {
    const paragraph = sentences('huge', 40); // ~2,400 characters
    const chunks = chunkSections([{ heading: 'H', paragraphs: [paragraph] }], opts);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(600);
      expect(chunk.text).toMatch(/^The huge sentence number \d+ explains one more detail\./);
      expect(chunk.text).toMatch(/explains one more detail\.$/);
    }
    const covered = new Set(chunks.flatMap((c) => [...c.text.matchAll(/number (\d+)/g)].map((m) => m[1])));
    expect(covered.size).toBe(40);
  });

  it('falls back to whitespace and hard cuts for text without sentence ends', () => {
    const words = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    const blob = 'x'.repeat(1500);
    const chunks = chunkSections([{ heading: '', paragraphs: [words, blob] }], opts);
    for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(600);
    expect(chunks.map((c) => c.text).join(' ')).toContain('word299');
    expect(chunks.map((c) => c.text).join('').replace(/[^x]/g, '').length).toBeGreaterThanOrEqual(1500);
  });

  it('merges a tiny section into a following child section only', () => {
    const sections: Section[] = [
      { heading: 'Class: Hash', paragraphs: ['Short intro of the class.'] },
      { heading: 'Class: Hash > hash.digest()', paragraphs: ['Calculates the digest of all of the data.'] },
      { heading: 'Sibling', paragraphs: ['Tiny sibling text.'] },
      { heading: 'Other', paragraphs: ['Unrelated text.'] },
    ];
    const chunks = chunkSections(sections);
    expect(chunks).toEqual([
      { ord: 0, heading: 'Class: Hash > hash.digest()', page: null, text: 'Short intro of the class.\n\nCalculates the digest of all of the data.' },
      { ord: 1, heading: 'Sibling', page: null, text: 'Tiny sibling text.' },
      { ord: 2, heading: 'Other', page: null, text: 'Unrelated text.' },
    ]);
  });

  it('carries the page of each section onto its chunks, and merges a tiny section only within its page', () => {
    const sections: Section[] = [
      { heading: 'Manual', paragraphs: ['Intro on page one.'], page: 1 },
      { heading: 'Manual > Setup', paragraphs: ['Setup starts on page two.'], page: 2 },
      { heading: 'Manual > Setup', paragraphs: ['Setup goes on over page three.'], page: 3 },
    ];
    expect(chunkSections(sections)).toEqual([
      { ord: 0, heading: 'Manual', page: 1, text: 'Intro on page one.' },
      { ord: 1, heading: 'Manual > Setup', page: 2, text: 'Setup starts on page two.' },
      { ord: 2, heading: 'Manual > Setup', page: 3, text: 'Setup goes on over page three.' },
    ]);
  });


  it('chunks plain text into a single-heading stream', () => {
    const text = [sentences('plain', 8), sentences('text', 8), sentences('more', 8)].join('\n\n');
    const chunks = chunkSections(parseDocument(text, 'text/plain'), opts);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.heading).toBe('');
      expect(chunk.text.length).toBeLessThanOrEqual(600);
      expect(chunk.text.length).toBeGreaterThan(0);
    }
  });

  it('rejects invalid options', () => {
    expect(() => chunkSections([], { targetChars: 0 })).toThrow(RangeError);
    expect(() => chunkSections([], { targetChars: 3000, maxChars: 2000 })).toThrow(RangeError);
  });

  it.each([
    [{ targetChars: 0 }, 'chunk option targetChars must be an integer >= 1, got 0'],
    [{ maxChars: 2.5 }, 'chunk option maxChars must be an integer >= 1, got 2.5'],
    [{ overlapChars: -1 }, 'chunk option overlapChars must be an integer >= 0, got -1'],
    [{ targetChars: 3000, maxChars: 2000 }, 'chunk option targetChars (3000) must not exceed maxChars (2000)'],
  ])('says which option is wrong: %j', (options, message) => {
    expect(() => chunkSections([], options)).toThrow(new RangeError(message));
  });

  it('accepts the smallest sizes (1 character, no overlap) and targetChars equal to maxChars', () => {
    const texts = (o: ChunkOptions) => chunkSections([{ heading: '', paragraphs: ['abc'] }], o).map((c) => c.text);
    expect(texts({ targetChars: 1, maxChars: 1, overlapChars: 0 })).toEqual(['a', 'b', 'c']);
    expect(texts({ targetChars: 5, maxChars: 5, overlapChars: 0 })).toEqual(['abc']);
  });

  // Sizes small enough to follow by hand: target 20, max 30, no overlap; paragraphs are joined by '\n\n' (2).
  const small: ChunkOptions = { targetChars: 20, maxChars: 30, overlapChars: 0 };
  const a = (n: number) => 'a'.repeat(n);
  const b = (n: number) => 'b'.repeat(n);
  it.each([
    ['fills up to targetChars exactly (10 + 2 + 8 = 20)', [a(10), b(8)], [`${a(10)}\n\n${b(8)}`]],
    ['stops one past targetChars when the chunk is already half full (10 + 2 + 9 = 21)', [a(10), b(9)], [a(10), b(9)]],
    ['lets a chunk under half of targetChars grow to maxChars (9 + 2 + 19 = 30)', [a(9), b(19)], [`${a(9)}\n\n${b(19)}`]],
    ['never past maxChars (9 + 2 + 20 = 31)', [a(9), b(20)], [a(9), b(20)]],
    ['counts every paragraph already in the chunk toward half of targetChars (4 + 2 + 4 = 10)', ['aaaa', 'bbbb', 'c'.repeat(12)], ['aaaa\n\nbbbb', 'c'.repeat(12)]],
    ['trims paragraphs and drops empty ones', ['  lead  ', '   ', '\n', 'tail'], ['lead\n\ntail']],
  ])('packs paragraphs: %s', (_label, paragraphs, expected) => {
    expect(chunkSections([{ heading: 'H', paragraphs }], small).map((c) => c.text)).toEqual(expected);
  });

  it('keeps a paragraph of exactly maxChars whole rather than splitting its sentences', () => {
    const paragraph = 'Alpha beta gamma. Delta epsil!';
    expect(paragraph).toHaveLength(30);
    expect(chunkSections([{ heading: 'H', paragraphs: ['zz', paragraph] }], small).map((c) => c.text)).toEqual(['zz', paragraph]);
  });

  it('joins the first sentence of a split paragraph to the chunk with a blank line, and trims an indented line that starts a chunk', () => {
    expect(chunkSections([{ heading: 'H', paragraphs: ['zz', 'Alpha beta gamma. Delta epsilon!'] }], small).map((c) => c.text))
      .toEqual(['zz\n\nAlpha beta gamma.', 'Delta epsilon!']);
    expect(chunkSections([{ heading: 'H', paragraphs: ['First line is right here ok.\n    second line here'] }], small).map((c) => c.text))
      .toEqual(['First line is right here ok.', 'second line here']);
  });

  it('splits an over-long sentence at spaces, keeping the line break before its first word', () => {
    const o: ChunkOptions = { targetChars: 10, maxChars: 10, overlapChars: 0 };
    expect(chunkSections([{ heading: 'H', paragraphs: ['Hi.\nalpha beta gamma delta'] }], o).map((c) => c.text))
      .toEqual(['Hi.\nalpha', 'beta gamma', 'delta']);
    expect(chunkSections([{ heading: 'H', paragraphs: ['abcdefghijklmnopqrstuvwxyz yz'] }], o).map((c) => c.text))
      .toEqual(['abcdefghij', 'klmnopqrst', 'uvwxyz yz']);
  });

  it.each([
    ['a section of 199 characters (100 + 2 + 97) goes into its child', 97, 1],
    ['a section of 200 characters (100 + 2 + 98) keeps its own chunk', 98, 2],
  ])('tiny sections: %s', (_label, second, count) => {
    const chunks = chunkSections([
      { heading: 'P', paragraphs: [a(100), b(second)] },
      { heading: 'P > C', paragraphs: ['child'] },
    ]);
    expect(chunks.map((c) => c.heading)).toEqual(count === 1 ? ['P > C'] : ['P', 'P > C']);
    expect(chunks[0]!.text).toBe(count === 1 ? `${a(100)}\n\n${b(second)}\n\nchild` : `${a(100)}\n\n${b(second)}`);
  });

  it.each([
    ['', 'Intro', true],
    ['', '', false],
    ['Guide', 'Guide > Setup', true],
    ['Guide', 'Guides > Setup', false],
    ['Guide', 'Other', false],
  ])('a tiny section headed %j goes into a next section headed %j: %s', (parent, child, merged) => {
    const chunks = chunkSections([
      { heading: parent, paragraphs: ['Tiny parent.'] },
      { heading: child, paragraphs: ['Child text.'] },
    ]);
    expect(chunks.map((c) => [c.heading, c.text])).toEqual(merged
      ? [[child, 'Tiny parent.\n\nChild text.']]
      : [[parent, 'Tiny parent.'], [child, 'Child text.']]);
  });

  it.each([
    // 'One two.' (8) 'Three four.' (11) 'Five six.' (9): the last sentence is 9 characters, the last two 21.
    ['takes the last whole sentences that fit overlapChars (20: one sentence)', 20, 'Five six.\n\nSeven eight nine ten eleven.'],
    ['takes a suffix of exactly overlapChars (21: two sentences)', 21, 'Three four. Five six.\n\nSeven eight nine ten eleven.'],
  ])('overlap: %s', (_label, overlapChars, second) => {
    const first = 'One two. Three four. Five six.';
    const chunks = chunkSections([{ heading: 'H', paragraphs: [first, 'Seven eight nine ten eleven.'] }], { targetChars: 40, maxChars: 60, overlapChars });
    expect(chunks.map((c) => c.text)).toEqual([first, second]);
  });

  it('shrinks the overlap so that the next chunk stays within maxChars', () => {
    // max 45 - next paragraph 35 - separator 2 leaves 8 characters: less than 'Five six.' (9), so no overlap.
    const first = 'One two. Three four. Five six.';
    const next = 'Seven eight nine ten eleven twelve!';
    expect(next).toHaveLength(35);
    expect(chunkSections([{ heading: 'H', paragraphs: [first, next] }], { targetChars: 40, maxChars: 45, overlapChars: 20 }).map((c) => c.text))
      .toEqual([first, next]);
  });

  it('finds the overlap at the end of a long chunk', () => {
    // 20 sentences of 18 characters ('Item 10 ends here.' ... 'Item 29 ends here.'), 379 characters.
    const first = Array.from({ length: 20 }, (_, i) => `Item ${i + 10} ends here.`).join(' ');
    expect(first).toHaveLength(379);
    const chunks = chunkSections([{ heading: 'H', paragraphs: [first, 'Final words follow now.'] }], { targetChars: 400, maxChars: 450, overlapChars: 40 });
    expect(chunks.map((c) => c.text)).toEqual([first, 'Item 28 ends here. Item 29 ends here.\n\nFinal words follow now.']);
  });
});
