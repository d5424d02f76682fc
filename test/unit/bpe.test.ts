import { readdirSync, readFileSync } from 'node:fs';
import { Tiktoken } from 'js-tiktoken/lite';
import o200k_base from 'js-tiktoken/ranks/o200k_base';
import { describe, expect, it } from 'vitest';
import { o200kCounter } from '../../src/models/tokenizer.js';

/** js-tiktoken's own encoder: the reference the counter must agree with. Slow on long runs, so inputs stay short. */
const reference = new Tiktoken(o200k_base);
const refCount = (text: string) => reference.encode(text, [], []).length;
const counter = o200kCounter();

/** A seeded generator (numbers in [0, 1)), so the random corpus is the same on every run. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

describe('BpeCounter (o200k_base) counts exactly what js-tiktoken encodes', () => {
  it('on every document of docs/ (Markdown, code, tables)', () => {
    const dir = new URL('../../docs/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.md'));
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) {
      const text = readFileSync(new URL(f, dir), 'utf8');
      expect(counter.count(text), f).toBe(refCount(text));
    }
  });

  it('on edge cases: whitespace runs, digits, contractions, special-token look-alikes, lone surrogates', () => {
    const cases = [
      '', ' ', '\n\n\n', ' '.repeat(300) + 'x', ' \t'.repeat(100), '\r\n \r\n', '1'.repeat(100), '12345 678.9',
      "don't I'LL we've THEY'RE", '<|endoftext|><|fim_prefix|>', '\ud800', 'a\udc00b', '😀'.repeat(150), '👍🏽👩‍👩‍👧',
      '漢'.repeat(300), '漢字 語言 文化。東京！', 'é'.repeat(200), 'ǅungla Ǉ', 'a\u0301\u0302', 'x'.repeat(700),
      'aZ3xq'.repeat(120), 'Привет, мир! مرحبا नमस्ते', '```ts\nconst x = 1;\n```',
    ];
    for (const text of cases) expect(counter.count(text), JSON.stringify(text.slice(0, 40))).toBe(refCount(text));
  });

  it('on 3,000 random strings over a mixed alphabet and 500 of random code points', () => {
    const rnd = seeded(42);
    const alphabet = ['漢', '字', '😀', '👍🏽', 'é', 'ß', 'Ж', 'ا', 'ह', ' ', '\n', '\t', "'", 's', 'A', 'z', '1', '.', '!', '<|endoftext|>', '\ud800', 'ǅ', '\u0301', '  '];
    for (let k = 0; k < 3000; k++) {
      let text = '';
      const len = 1 + Math.floor(rnd() * 60);
      for (let i = 0; i < len; i++) text += alphabet[Math.floor(rnd() * alphabet.length)];
      expect(counter.count(text), JSON.stringify(text)).toBe(refCount(text));
    }
    for (let k = 0; k < 500; k++) {
      let text = '';
      const len = 1 + Math.floor(rnd() * 40);
      for (let i = 0; i < len; i++) {
        const cp = Math.floor(rnd() * 0x2ffff);
        if (cp < 0xd800 || cp >= 0xe000) text += String.fromCodePoint(cp);
      }
      expect(counter.count(text), JSON.stringify(text)).toBe(refCount(text));
    }
  });
});

describe('BpeCounter cost is linear in the text', () => {
  /** Rank-table probes spent counting `text`. */
  const lookups = (text: string) => {
    counter.lookups = 0;
    counter.count(text);
    return counter.lookups;
  };

  it.each([
    ['32,000 CJK characters, no space', '漢'.repeat(32_000)],
    ['16,000 emoji', '😀'.repeat(16_000)],
    ['32,000 spaces', ' '.repeat(31_999) + 'x'],
    ['125 words of 255 CJK characters', ('漢'.repeat(255) + ' ').repeat(125)],
    ['32,000 distinct CJK characters', Array.from({ length: 32_000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20_000))).join('')],
    ['32,000 ASCII letters, no space', 'a'.repeat(32_000)],
  ])('%s: at most 3 rank lookups per UTF-8 byte, and twice the text costs about twice as much', (_label, text) => {
    const bytes = Buffer.byteLength(text);
    const full = lookups(text);
    expect(full).toBeLessThanOrEqual(3 * bytes);
    const half = lookups(text.slice(0, text.length / 2));
    expect(full).toBeLessThanOrEqual(2.2 * half);
  });
});
