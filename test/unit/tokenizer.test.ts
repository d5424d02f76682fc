import { describe, expect, it } from 'vitest';
import { countMessageTokens, countTokens } from '../../src/models/tokenizer.js';
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

describe('countTokens on long runs without whitespace', () => {
  it('counts them piecewise, close to the whole-run count, so a 32,000-char word cannot stall the loop', () => {
    const word = 'aZ3xq'.repeat(120); // 600 chars, one pre-token
    const piecewise = countTokens(word);
    expect(piecewise).toBeGreaterThan(0);
    // Compare with the text split by spaces every 128 chars, which the BPE sees as separate words.
    const spaced = word.match(/.{1,128}/g)!.join(' ');
    expect(Math.abs(piecewise - countTokens(spaced))).toBeLessThanOrEqual(5);
    expect(countTokens(`hello ${word} world`)).toBe(piecewise + countTokens('hello  world'));
    expect(countTokens('x'.repeat(32_000))).toBeGreaterThan(32_000 / 128);
  });
});
