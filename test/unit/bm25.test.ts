/**
 * BM25 in the application (src/store/mongodb/bm25.ts), the ranking MongoDB's knowledge search uses: the
 * formula's values on a hand-computed case, and its agreement with SQLite FTS5's own bm25() (a real FTS5
 * table, the SQLite store's ranking) on a small corpus: same order, scores within 1%.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { bm25, chunkLength, idf, queryTerms, rank, terms, type Bm25Corpus } from '../../src/store/mongodb/bm25.js';

describe('bm25 (application)', () => {
  it('tokens: letter and digit runs, lower-cased, Porter2-stemmed; a chunk\'s length counts title, heading and body', () => {
    expect(terms('Streaming replies, Node.js v20!')).toEqual(['stream', 'repli', 'node', 'js', 'v20']);
    expect(chunkLength({ title: 'The Guide', heading: 'Intro > Setup', body: 'Install it.' })).toBe(6);
    expect(queryTerms(['streams', 'streaming', 'foo_bar'])).toEqual([{ term: 'stream', token: 'streams' }, { term: 'foo', token: 'foo' }, { term: 'bar', token: 'bar' }]);
  });

  it('idf is ln((N - n + 0.5) / (n + 0.5)), and 1e-6 when that is not positive (FTS5)', () => {
    expect(idf(10, 2)).toBeCloseTo(1.2237754316, 9);
    expect(idf(10, 9)).toBe(1e-6);
    expect(idf(10, 5)).toBe(1e-6);
    expect(idf(10, 0)).toBeCloseTo(3.0445224377, 9);
  });

  it('scores by hand: weighted term counts, length normalisation against the mean length', () => {
    const corpus: Bm25Corpus = { rows: 10, avgLength: 5, docFreq: new Map([['kangaroo', 2], ['hop', 9]]) };
    // body only: f = 1, D = 2.
    expect(bm25({ title: '', heading: '', body: 'kangaroo hops' }, ['kangaroo'], corpus)).toBeCloseTo(1.6218710540, 9);
    // title (weight 4) + body (1): f = 5, D = 3; "hops" in 9 of 10 rows adds 1e-6-weighted.
    expect(bm25({ title: 'Kangaroo', heading: '', body: 'kangaroo hops' }, ['kangaroo', 'hop'], corpus)).toBeCloseTo(2.3050576593, 9);
    expect(bm25({ title: 'x', heading: '', body: 'y' }, ['kangaroo'], corpus)).toBe(0);
    // An empty corpus (mean length 0) normalises against 1 instead of dividing by 0.
    expect(bm25({ title: '', heading: '', body: 'kangaroo' }, ['kangaroo'], { ...corpus, avgLength: 0 })).toBeCloseTo(1.2237754316 * 2.2 / (1 + 1.2 * (0.25 + 0.75)), 9);
  });

  it('rank keeps scored chunks only, best first, ties in the order given, at most k, rounded to 3 decimals', () => {
    const corpus: Bm25Corpus = { rows: 10, avgLength: 3, docFreq: new Map([['owl', 2]]) };
    const c = (body: string) => ({ title: '', heading: '', body });
    const ranked = rank([c('cat'), c('owl owl owl'), c('an owl'), c('one owl')], ['owl'], corpus, 5);
    expect(ranked.map((r) => r.item.body)).toEqual(['owl owl owl', 'an owl', 'one owl']);
    expect(ranked.map((r) => r.score)).toEqual([1.923, 1.417, 1.417]);
    const tied = [c('owl 1'), c('owl 2'), c('owl 3'), c('owl 4')];
    expect(rank(tied, ['owl'], corpus, 4).map((r) => r.item)).toEqual(tied);
    expect(rank([c('owl'), c('owl')], ['owl'], corpus, 1)).toHaveLength(1);
    expect(rank([c('owl')], ['owl'], corpus, 0)).toEqual([]);
  });

  it('agrees with SQLite FTS5\'s bm25(4, 2, 1) on a small corpus: same order, scores within 1%', () => {
    const rows = [
      { title: 'Marsupials', heading: 'Kangaroos', body: 'The kangaroo hops. A kangaroo carries its young in a pouch; kangaroo joeys grow there.' },
      { title: 'Marsupials', heading: 'Koalas', body: 'Koalas sleep most of the day in eucalyptus trees.' },
      { title: 'Zoo guide', heading: 'Animals', body: 'The zoo has lions, tigers, penguins, otters, a kangaroo and many other animals to visit.' },
      { title: 'Zoo guide', heading: 'Opening hours', body: 'The zoo opens at nine and closes at six, every day of the year.' },
      { title: 'Travel', heading: 'Australia', body: 'Australia is home to the kangaroo, the koala and the wombat.' },
      { title: 'Travel', heading: 'Packing', body: 'Pack light: a hat, water, and walking shoes for the day.' },
      // Rows about other things, so that the query terms are rare (with few rows FTS5's idf floors at 1e-6).
      ...Array.from({ length: 24 }, (_, i) => ({ title: `Manual ${i}`, heading: 'Settings', body: `Open the settings page number ${i} and press save to keep the changes.` })),
    ];
    const db = new Database(':memory:');
    db.exec("CREATE VIRTUAL TABLE t USING fts5(title, heading, body, tokenize='porter unicode61')");
    const insert = db.prepare('INSERT INTO t (title, heading, body) VALUES (?, ?, ?)');
    for (const r of rows) insert.run(r.title, r.heading, r.body);
    for (const query of ['kangaroo pouch', 'zoo day', 'koala sleep trees']) {
      const words = query.split(' ');
      const sqlite = db.prepare(`SELECT rowid, -bm25(t, 4.0, 2.0, 1.0) AS score FROM t WHERE t MATCH ? ORDER BY bm25(t, 4.0, 2.0, 1.0)`)
        .all(words.map((w) => `"${w}"`).join(' OR ')) as Array<{ rowid: number; score: number }>;
      const qterms = queryTerms(words).map((q) => q.term);
      const docFreq = new Map(qterms.map((q) => [q, rows.filter((r) => terms(`${r.title} ${r.heading} ${r.body}`).includes(q)).length]));
      const corpus = { rows: rows.length, avgLength: rows.reduce((n, r) => n + chunkLength(r), 0) / rows.length, docFreq };
      const ours = rank(rows, qterms, corpus, 10);
      expect(sqlite.length, query).toBeGreaterThan(1);
      expect(ours.map((o) => rows.indexOf(o.item) + 1), query).toEqual(sqlite.map((r) => r.rowid));
      ours.forEach((o, i) => expect(Math.abs(bm25(o.item, qterms, corpus) - sqlite[i]!.score) / sqlite[i]!.score, query).toBeLessThan(0.01));
    }
    db.close();
  });
});
