import { describe, expect, it } from 'vitest';
import { isStopword, STOPWORDS } from '../../src/text/stopwords.js';
import { contentTerms, stem, stemSet, words } from '../../src/text/terms.js';

describe('the project stemmer (Porter2)', () => {
  it('gives Snowball English stems, which the old suffix-stripping subset did not', () => {
    expect(stem('listeners')).toBe('listen');
    expect(stem('generalization')).toBe('general');
    expect(stem('running')).toBe('run');
    expect(stem('caches')).toBe(stem('cached'));
    expect(stem('streaming')).toBe('stream');
  });
  it('leaves words with digits or other scripts as they are', () => {
    expect(stem('sha256')).toBe('sha256');
    expect(stem('ストリーム')).toBe('ストリーム');
    // Anchored: letters only, start to end.
    expect(stem('2streams')).toBe('2streams');
    expect(stem('streams2')).toBe('streams2');
  });
});

describe('the project stopword list', () => {
  it("holds the stopword package's English words and the question scaffolding, not API names", () => {
    for (const w of ['the', 'about', 'does', 'why', 'explain', 'mean', 'not']) expect(STOPWORDS.has(w)).toBe(true);
    for (const w of ['once', 'stream', 'buffer', 'off']) expect(isStopword(w)).toBe(false);
    expect(isStopword('WHY')).toBe(true);
  });
});

describe('content terms', () => {
  it('drops stopwords, short words and excluded words, and stems the rest in question order', () => {
    expect([...contentTerms('Why does the listener of an emitter not fire once?')]).toEqual(['listen', 'emitt', 'fire', 'onc']);
    expect([...contentTerms('hello streams', { exclude: new Set(['hello']) })]).toEqual(['stream']);
    expect(words('fs.readFile() — 2 Äpfel')).toEqual(['fs', 'readfile', '2', 'äpfel']);
    expect(stemSet('the streams stream')).toEqual(new Set(['the', 'stream']));
  });

  it('drops words shorter than 3 characters unless told otherwise', () => {
    expect([...contentTerms('ox tails')]).toEqual(['tail']);
    expect([...contentTerms('ox tails', { minChars: 2 })]).toEqual(['ox', 'tail']);
  });
});
