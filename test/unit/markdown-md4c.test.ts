import { describe, it, expect } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MD4C_RESET_AFTER_CHARS, parseDocument, parseMarkdownMarked, parseMarkdownMd4c } from '../../src/knowledge/parse-document.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const corpusDir = path.resolve(projectRoot, '../shared/corpus/nodejs-api');
const hasCorpus = existsSync(corpusDir);
if (!hasCorpus) console.warn('skipped: the md4c/marked comparison on ../shared/corpus/nodejs-api (not found)');

// Each construct is parsed by both parsers; the md4c walk must give exactly what the marked walk gives.
const CONSTRUCTS: Array<[string, string]> = [
  ['a link with a title (md4w writes its JSON without the opening quote)', 'See [the guide](https://a.example "The guide") now.'],
  ['a link whose title holds an escaped quote', 'See [x](https://a.example "a \\" b") now.'],
  ['a hard break with two spaces and with a backslash', 'one  \ntwo\\\nthree'],
  ['soft line breaks', 'one\ntwo\nthree'],
  ['a task list', '- [ ] todo\n- [x] done *now*'],
  ['a loose list with a paragraph and a quote in an item', '* a\n\n  second paragraph\n\n  > quoted\n* b'],
  ['an ordered list starting at 3 with a nested list and code', '3. three\n   - inner `x`\n4. four\n\n       indented code in item'],
  ['a fenced code block in a list item', '- item\n\n  ```js\n  const a = 1;\n  ```'],
  ['a table with an escaped pipe, a code span and an empty row', '| a | b |\n|---|---|\n| `x` \\| y | &amp; |\n|   |   |'],
  ['entities', 'A &amp; B &#169; &#x1F600; &nbsp;x &bogus; &lt;tag&gt;'],
  ['a code span with markup characters', 'Use `a && b < c` and `&amp;`.'],
  ['a code block with an entity and markup', '```\nif (a < b && c) { x = "&amp;"; }\n```'],
  ['an indented code block with blank lines around', '\n\n    line 1\n\n    line 2\n\n'],
  ['an HTML block table', '<table>\n<tr><td>A</td><td>B &amp; C</td></tr>\n</table>'],
  ['inline HTML and a comment', 'x <span class="a">tagged</span> y <!-- hidden --> z 2<sup>30</sup>'],
  ['an HTML comment block', '<!-- YAML\nadded: v1\n-->\n\nText.'],
  ['setext headings and ATX headings with markup', 'Top\n===\n\n## `fs.open()` and <b>bold</b>\n\ntext\n\nSub\n---\n\nmore'],
  ['an image, an autolink, a bare URL and an e-mail', '![a chart](c.png "T") <https://a.example/x> www.a.example me@a.example'],
  ['resolved and unresolved reference links', '[used][] and [other][nope] and [`code`][used]\n\n[used]: https://a.example'],
  ['strikethrough, emphasis and escapes', '~~old~~ **bold** _em_ \\*not em\\* \\_x\\_'],
  ['a block quote with a list and a heading', '> # Quote heading\n> - a\n> - b'],
  ['headings deeper than three levels', '# A\n## B\n### C\n#### D\n\ntext\n\n##### E\n\nmore'],
  ['a thematic break between paragraphs', 'one\n\n---\n\ntwo\n\n***\n\nthree'],
  ['a paragraph of only inline HTML', '<span></span>'],
  ['text before the first heading', 'Intro.\n\n# Title\n\nBody.'],
  ['non-ASCII text', 'Größe café 日本語 — “quoted” …'],
  ['intraword emphasis and code in tight list items', '- foo*bar*baz\n- un`code`spaced &amp;more\n- [a](u)[b](v)'],
  ['an attribute holding a br tag', 'a<span title="<br>">b</span>c'],
  ['a level-six heading, and a second-level heading with no first level', '## Two\n\ntext\n\n###### Six\n\nsix text'],
  ['a code block whose first line is indented', '```\n  indented first\nsecond\n```'],
  ['empty list items', '- a\n-\n- b'],
  ['an empty ordered item', '1. a\n2.\n3. b'],
  ['an empty code block in an item', '- c\n\n  ```\n  ```'],
  ['a table in a loose list item', '- b\n\n  | x |\n  |---|\n  | y |'],
  ['blocks in tight list items: a quote, a rule, a heading, an ordered list', '- a\n  > q\n- c\n  ***\n- # head\n- d\n  1. e'],
  ['HTML in list items: a block, a span and a hard break', '- item\n\n  <div>block text</div>\n- x <span>y</span> z  \n  next'],
  ['a quote holding a rule, code and a table', '> ---\n>\n> ```\n> code\n> ```\n>\n> | a |\n> |---|\n> | b |'],
];

describe('parseMarkdownMd4c', () => {
  it.each(CONSTRUCTS)('gives the sections marked gives for %s', (_label, markdown) => {
    const md4c = parseMarkdownMd4c(markdown);
    expect(md4c).toBeDefined();
    expect(md4c).toEqual(parseMarkdownMarked(markdown));
  });

  it('reads a link title that md4w writes without its opening quote, and keeps only the link text', () => {
    expect(parseMarkdownMd4c('# H\n\nSee [the guide](https://a.example "Guide") now.')).toEqual([
      { heading: 'H', paragraphs: ['See the guide now.'] },
    ]);
  });

  it('turns C0 control characters into spaces (md4w would write them into its JSON unescaped)', () => {
    expect(parseMarkdownMd4c('# H\n\na\u0001b\u001fc\td')).toEqual([{ heading: 'H', paragraphs: ['a b c d'] }]);
  });

  it('parses a document past the reset size, then the next document with the fresh instance', () => {
    const paragraph = 'A sentence of the long document. '.repeat(200).trim();
    const count = Math.ceil(MD4C_RESET_AFTER_CHARS / paragraph.length) + 1;
    const long = `# Long\n\n${Array.from({ length: count }, () => paragraph).join('\n\n')}\n`;
    expect(long.length).toBeGreaterThan(MD4C_RESET_AFTER_CHARS);
    const sections = parseMarkdownMd4c(long);
    expect(sections?.length).toBe(1);
    expect(sections?.[0]?.paragraphs.length).toBe(count);
    expect(parseMarkdownMd4c('# Next\n\nIt *still* works.')).toEqual([{ heading: 'Next', paragraphs: ['It still works.'] }]);
  });

  it('returns undefined when md4w cannot write the tree (an image whose alt text holds markup)', () => {
    expect(parseMarkdownMd4c('![a *b*](c.png)')).toBeUndefined();
  });

  it('lets parseDocument fall back to marked for such a document (marked keeps an alt text as written)', () => {
    const markdown = '# Diagrams\n\n![the *flow* chart](c.png) shows the flow.\n\nSecond paragraph.';
    const sections = parseDocument(markdown, 'text/markdown');
    expect(sections).toEqual([{ heading: 'Diagrams', paragraphs: ['the *flow* chart shows the flow.', 'Second paragraph.'] }]);
    expect(sections).toEqual(parseMarkdownMarked(markdown));
  });

  it('parses random Markdown-like input into trimmed, non-empty paragraphs, falling back only for images', () => {
    const atoms = ['a', ' ', '\n', '\n\n', '*', '_', '`', '[', ']', '(', ')', '!', '<', '>', '<b>', '</b>', '&', '&amp;', '"', '\\', '#', '-',
      '|', '~', 'http://x.y', '\t', '1.', ':', '\u0001', 'é', '<!--', '-->', '```', '    ', '[x]', '![a *b*](c)', '[l]: http://u "t"', '[t](u "v")'];
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    let fellBack = 0;
    for (let i = 0; i < 3000; i++) {
      let markdown = '';
      for (let j = 1 + next(30); j > 0; j--) markdown += atoms[next(atoms.length)];
      const md4c = parseMarkdownMd4c(markdown);
      if (md4c === undefined) {
        fellBack++;
        expect(markdown).toContain('![');
      }
      for (const section of parseDocument(markdown, 'text/markdown')) {
        for (const paragraph of section.paragraphs) {
          expect(paragraph.length).toBeGreaterThan(0);
          expect(paragraph).toBe(paragraph.trim());
        }
      }
    }
    expect(fellBack).toBeGreaterThan(0); // the image case is in the mix, so the fallback ran
  });

  it.skipIf(!hasCorpus)('gives the sections marked gives on every document of the Node.js API corpus', () => {
    const files = readdirSync(corpusDir).filter((f) => f.endsWith('.md')).sort();
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) {
      const text = readFileSync(path.join(corpusDir, file), 'utf8').replace(/\r\n?/g, '\n');
      const md4c = parseMarkdownMd4c(text);
      if (md4c === undefined) throw new Error(`${file}: md4c could not parse it`);
      expect(md4c, file).toEqual(parseMarkdownMarked(text));
    }
  });
});
