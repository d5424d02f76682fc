import { createHash } from 'node:crypto';
import { describe, it, expect } from 'vitest';
import ingest from '../../src/knowledge/ingest.worker.js';
import {
  isWarmUpDone, warmUpDocuments, warmUpMarkdown, WARM_UP_DOCUMENT_CHARS, WARM_UP_DOCUMENTS, WARM_UP_DONE, WARM_UP_ROUNDS, WARM_UP_SEED,
} from '../../src/knowledge/warm-up.js';

// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\u0000-\u007f]/;

describe('warmUpMarkdown', () => {
  it('is deterministic: the same size and seed give the same text, another seed another text', () => {
    expect(warmUpMarkdown(5000, 11)).toBe(warmUpMarkdown(5000, 11));
    expect(warmUpMarkdown(5000, 11)).not.toBe(warmUpMarkdown(5000, 13));
    expect(warmUpMarkdown()).toBe(warmUpMarkdown(8000, 0x5eed));
  });

  it('is at least the size asked for, and not much more (one section over at most)', () => {
    for (const chars of [1, 700, 8000, 50_000]) {
      const text = warmUpMarkdown(chars, 3);
      expect(text.length).toBeGreaterThanOrEqual(chars);
      expect(text.length).toBeLessThan(chars + 6000);
    }
    expect(warmUpMarkdown(50_000, 3).length).toBeGreaterThan(warmUpMarkdown(8000, 3).length * 5);
  });

  it('refuses a size that is not an integer >= 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => warmUpMarkdown(bad)).toThrow(RangeError);
  });

  it('holds the constructs uploads have: headings, YAML comments, lists, fences, tables, HTML, images, quotes', () => {
    const text = warmUpMarkdown(20_000, 7);
    expect(text).toMatch(/^# Warm-up reference$/m);
    expect(text).toMatch(/^#{2,4} `\w+\.\w+\(options\[, callback\]\)`$/m);
    expect(text).toMatch(/^<!-- YAML\nadded: v\d+\.\d+\.0$/m);
    expect(text).toMatch(/^\* `options` \{Object\} /m);
    expect(text).toMatch(/^```mjs$/m);
    expect(text).toMatch(/^~~~console$/m);
    expect(text).toMatch(/^\| :----- \| :--: \| ------: \|$/m);
    expect(text).toMatch(/^<table>$/m);
    expect(text).toMatch(/^!\[\w+ diagram\]\(https:\/\/example\.org\/\w+\.png "A \w+"\)$/m);
    expect(text).toMatch(/^> > /m);
    expect(text).toMatch(/^3\) /m);
    expect(text).toMatch(/&lt;\w+&gt;/);
  });

  it('has non-ASCII text for odd seeds only, so warm-up sees one-byte and two-byte strings', () => {
    expect(warmUpMarkdown(8000, 7)).toMatch(NON_ASCII);
    expect(warmUpMarkdown(8000, 8)).not.toMatch(NON_ASCII);
  });
});

describe('warmUpDocuments', () => {
  it('are the sample documents of seeds WARM_UP_SEED + i, as UTF-8 bytes', () => {
    const docs = warmUpDocuments();
    expect(docs).toHaveLength(WARM_UP_DOCUMENTS);
    const decoder = new TextDecoder();
    docs.forEach((bytes, i) => {
      expect(bytes).toBeInstanceOf(Uint8Array);
      expect(decoder.decode(bytes)).toBe(warmUpMarkdown(WARM_UP_DOCUMENT_CHARS, WARM_UP_SEED + i));
    });
    expect(docs.filter((d) => NON_ASCII.test(decoder.decode(d)))).toHaveLength(WARM_UP_DOCUMENTS / 2);
  });

  it('go through the ingestion code as uploads do: every one parses into many chunks under API-style headings', async () => {
    const texts: string[] = [];
    for (const content of warmUpDocuments()) {
      const result = await ingest({ title: 'warm-up', contentType: 'text/markdown', content });
      if (!result.ok) throw new Error(`warm-up document failed: ${result.error}`);
      expect(result.chunks.length).toBeGreaterThanOrEqual(6);
      expect(result.chunks.some((c) => c.heading.startsWith('Warm-up reference > '))).toBe(true);
      texts.push(result.chunks.map((c) => c.text).join('\n'));
    }
    // Between them they hold every kind of block: GFM table rows become cells joined with ' | ', HTML
    // table rows likewise, fenced code keeps its lines, images keep their alt text.
    const all = texts.join('\n');
    expect(all).toMatch(/ \| \{string\} \| /);
    expect(all).toMatch(/^\d+ \| & \w+$/m);
    expect(all).toMatch(/console\.log\(x\);/);
    expect(all).toMatch(/\w+ diagram/);
  });

  it('are the sample the warm-up was measured with: changing it means measuring again (npm run bench -- ingest)', () => {
    const digest = createHash('sha256');
    for (const bytes of warmUpDocuments()) digest.update(bytes);
    expect(digest.digest('hex')).toBe('b6ad08bc76f8e0b8ac25b41dd572a6cfb4d760fcfcd95a15abcdd9a87ce9618c');
  });

  it('rounds default to a measured 6', () => {
    expect(WARM_UP_ROUNDS).toBe(6);
  });
});

describe('isWarmUpDone', () => {
  it('tells a worker\'s warm-up message from anything else a worker may post', () => {
    expect(isWarmUpDone({ [WARM_UP_DONE]: { rounds: 2, ms: 10 } })).toBe(true);
    for (const other of [null, undefined, 'parleyIngestWarmUpDone', 42, {}, { ready: true }, { [`${WARM_UP_DONE}x`]: {} }]) {
      expect(isWarmUpDone(other)).toBe(false);
    }
  });
});
