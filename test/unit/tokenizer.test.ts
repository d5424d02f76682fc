import { describe, expect, it } from 'vitest';
import { countMessageTokens, countTokens, truncateToTokens } from '../../src/models/tokenizer.js';
import type { ModelMessage } from '../../src/models/port.js';

describe('countTokens (o200k_base)', () => {
  it('matches known o200k_base counts', () => {
    // Values computed once with js-tiktoken's o200k_base ranks.
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('Hello, world!')).toBe(4);
    expect(countTokens('The quick brown fox jumps over the lazy dog.')).toBe(10);
  });

  it('counts the empty string as 0', () => {
    expect(countTokens('')).toBe(0);
  });

  it('counts special-token look-alikes as plain text instead of throwing', () => {
    expect(countTokens('<|endoftext|>')).toBe(7);
  });

  it('never decreases when text is appended', () => {
    const pieces = ['Streams ', 'are ', 'an abstraction ', 'for data; ', 'émoji 🚀 ', '数据流', '\n\n'];
    let text = '';
    let prev = 0;
    for (const p of pieces) {
      text += p;
      const n = countTokens(text);
      expect(n).toBeGreaterThanOrEqual(prev);
      expect(n).toBeLessThanOrEqual(prev + countTokens(p) + 1);
      prev = n;
    }
  });

  it('counts runs longer than 64 characters of one kind in 64-character pieces (linear for any script)', () => {
    // Exact where a piece boundary splits nothing that BPE would merge: one token per CJK character or emoji.
    expect(countTokens('漢'.repeat(32_000))).toBe(32_000);
    expect(countTokens('😀'.repeat(16_000))).toBe(16_000);
    // 500 pieces of 64: 8 tokens of 'aaaaaaaa' each; 500 pieces of 64 spaces: 1 token each.
    expect(countTokens('a'.repeat(32_000))).toBe(4_000);
    expect(countTokens(' '.repeat(32_000))).toBe(500);
    // Short runs are counted whole: 'word ' x 100 is 'word' + 99 x ' word' + a trailing space.
    expect(countTokens('word '.repeat(100))).toBe(101);
  });

  it('gives the same count on every call (the encoder is built once and reused)', () => {
    for (let i = 0; i < 50; i++) expect(countTokens('repeatable input')).toBe(3);
  });
});

describe('countMessageTokens', () => {
  it('is 0 for no messages', () => {
    expect(countMessageTokens([])).toBe(0);
  });

  it('sums contents plus 4 tokens per message', () => {
    const messages: ModelMessage[] = [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'hello world' },
      { role: 'assistant', content: '' },
      { role: 'tool', tool_call_id: 't1', name: 'x', content: '{"ok":true}' },
    ];
    // 'You are helpful.' = 4 tokens, 'hello world' = 2, '' = 0, '{"ok":true}' = 5; plus 4 x 4 messages.
    expect(countMessageTokens(messages)).toBe(27);
  });
});

describe('truncateToTokens', () => {
  /** The former greedy definition: add words while the prefix (trailing space trimmed) fits. */
  function greedy(text: string, max: number): { text: string; truncated: boolean } {
    if (countTokens(text) <= max) return { text, truncated: false };
    let out = '';
    for (const part of text.match(/\S+\s*/g) ?? []) {
      if (countTokens((out + part).trimEnd()) > max) break;
      out += part;
    }
    return { text: out.trimEnd(), truncated: true };
  }

  it.each([
    ['ten words', 'one two three four five six seven eight nine ten', 3],
    ['leading spaces', '  leading spaces are dropped when cutting', 2],
    ['mixed scripts', 'Streams are an abstraction for data; émoji 🚀 数据流 and more words after it', 9],
    ['one long word', 'unbreakable'.repeat(20), 5],
    ['a text that fits', 'short', 10],
    ['500 words at 0', 'word '.repeat(500), 0],
  ])('cuts %s (%#) like the greedy word-by-word definition', (_label, text, max) => {
    expect(truncateToTokens(text, max)).toEqual(greedy(text, max));
  });

  it('keeps whole words within the cap', () => {
    expect(truncateToTokens('one two three four five', 3)).toEqual({ text: 'one two three', truncated: true });
  });
});
