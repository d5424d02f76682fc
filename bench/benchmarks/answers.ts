/**
 * answers: how well the built-in model answers questions over the Node.js API docs corpus
 * (../shared/corpus/nodejs-api). The questions, their expected source documents and key terms are in
 * bench/answers/questions.json (our own wording). A fresh Parley (builtin model, no upstream) ingests
 * every corpus .md but SOURCE.md into a knowledge base, then for each question:
 *
 * - retrieval: `GET /v1/knowledge-bases/{kb}/search?q=<question>&k=10`; hit@3 = one of the first three
 *   passages comes from an expected document; reciprocal rank = 1 / rank of the first such passage
 *   (0 when none of the ten is); MRR is the mean over questions;
 * - answer: one-shot `POST /v1/agents/{agent}/chat` to an agent with that knowledge base; key-term
 *   coverage = the share of the question's key terms found in the answer (case-insensitive substring);
 *   also the answer length (characters), how many answers cite an expected document, and how many are
 *   the "nothing found" reply.
 *
 * Deterministic: same corpus, same code, same numbers (only wall time varies). `--smoke` runs the first
 * 8 questions over the documents they need.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startParleyServer } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { sleep, stopAll, parleyOptions, nodeDocsCorpus, type Ctx } from './common.js';

/** One question of bench/answers/questions.json. */
interface Question {
  id: string;
  question: string;
  /** Corpus file names without `.md` that answer the question. */
  documents: string[];
  /** Terms a good answer contains (case-insensitive substrings). */
  key_terms: string[];
}

/** What was measured for one question. */
interface QuestionResult {
  id: string;
  /** 1-based rank of the first passage from an expected document among the first 10; null when none. */
  rank: number | null;
  /** Document titles of the first 3 passages. */
  top3: string[];
  answer: string;
  answer_chars: number;
  key_terms_found: string[];
  key_terms_missing: string[];
  coverage: number;
  cited_titles: string[];
  cites_expected: boolean;
  no_match: boolean;
}

const NO_MATCH = 'I could not find anything about that in the knowledge base.';

function mean(xs: number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export async function answers(ctx: Ctx): Promise<BenchOutcome> {
  const { corpus, skipped } = nodeDocsCorpus(ctx, 'answers');
  if (skipped) return skipped;
  const questionsFile = join(ctx.root, 'bench', 'answers', 'questions.json');
  const all = (JSON.parse(readFileSync(questionsFile, 'utf8')) as { questions: Question[] }).questions;
  const questions = ctx.smoke ? all.slice(0, 8) : all;
  const needed = new Set(questions.flatMap((q) => q.documents));
  const files = readdirSync(corpus)
    .filter((f) => f.endsWith('.md') && f !== 'SOURCE.md')
    .filter((f) => !ctx.smoke || needed.has(f.replace(/\.md$/, '')))
    .sort();
  const docs = files.map((f) => ({ title: f.replace(/\.md$/, ''), body: readFileSync(join(corpus, f)) }));
  const config = { corpus, questions_file: 'bench/answers/questions.json', questions: questions.length, documents: docs.length, search_k: 10, hit_at: 3 };
  ctx.log(`answers: ${questions.length} questions over ${docs.length} documents`);

  const parley = await startParleyServer(ctx.root, parleyOptions(ctx, undefined));
  const results: QuestionResult[] = [];
  try {
    const auth = { authorization: `Bearer ${parley.apiKey}` };
    const kb = parley.knowledgeBaseId;
    const ids: string[] = [];
    for (const d of docs) {
      const res = await fetch(`${parley.url}/v1/knowledge-bases/${kb}/documents?title=${encodeURIComponent(d.title)}`, {
        method: 'POST', headers: { ...auth, 'content-type': 'text/markdown' }, body: d.body,
      });
      const body = (await res.json()) as { id?: string };
      if (res.status !== 202 || !body.id) throw new Error(`upload ${d.title}: ${res.status} ${JSON.stringify(body)}`);
      ids.push(body.id);
    }
    const pending = new Set(ids);
    const deadline = Date.now() + 600_000;
    while (pending.size > 0) {
      if (Date.now() > deadline) throw new Error(`${pending.size} documents not ready after 10 minutes`);
      await Promise.all([...pending].map(async (id) => {
        const res = await fetch(`${parley.url}/v1/knowledge-bases/${kb}/documents/${id}`, { headers: auth });
        const body = (await res.json()) as { status?: string; error?: string };
        if (body.status === 'ready') pending.delete(id);
        else if (body.status === 'failed') throw new Error(`document ${id} failed: ${body.error}`);
      }));
      if (pending.size > 0) await sleep(100);
    }
    ctx.log('answers: corpus ready');

    const agentRes = await fetch(`${parley.url}/v1/agents`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'answers-bench', knowledge_base_ids: [kb] }),
    });
    const agent = (await agentRes.json()) as { id?: string };
    if (agentRes.status !== 201 || !agent.id) throw new Error(`create agent: ${agentRes.status} ${JSON.stringify(agent)}`);

    for (const q of questions) {
      const searchRes = await fetch(`${parley.url}/v1/knowledge-bases/${kb}/search?q=${encodeURIComponent(q.question)}&k=10`, { headers: auth });
      if (searchRes.status !== 200) throw new Error(`search ${q.id}: ${searchRes.status} ${await searchRes.text()}`);
      const hits = ((await searchRes.json()) as { data: { title: string }[] }).data;
      const at = hits.findIndex((h) => q.documents.includes(h.title));
      const chatRes = await fetch(`${parley.url}/v1/agents/${agent.id}/chat`, {
        method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ message: q.question, stream: false }),
      });
      if (chatRes.status !== 200) throw new Error(`chat ${q.id}: ${chatRes.status} ${await chatRes.text()}`);
      const chat = (await chatRes.json()) as { content: string; citations: { title: string }[] };
      const lower = chat.content.toLowerCase();
      const found = q.key_terms.filter((t) => lower.includes(t.toLowerCase()));
      const cited = chat.citations.map((c) => c.title);
      results.push({
        id: q.id, rank: at < 0 ? null : at + 1, top3: hits.slice(0, 3).map((h) => h.title),
        answer: chat.content, answer_chars: chat.content.length,
        key_terms_found: found, key_terms_missing: q.key_terms.filter((t) => !found.includes(t)),
        coverage: found.length / q.key_terms.length,
        cited_titles: cited, cites_expected: cited.some((t) => q.documents.includes(t)), no_match: chat.content === NO_MATCH,
      });
    }
  } finally {
    await stopAll([parley]);
  }

  const n = results.length;
  const hit3 = results.filter((r) => r.rank !== null && r.rank <= 3).length / n;
  const mrr = mean(results.map((r) => (r.rank === null ? 0 : 1 / r.rank)));
  const coverage = mean(results.map((r) => r.coverage));
  const full = results.filter((r) => r.coverage === 1).length / n;
  const chars = results.map((r) => r.answer_chars);
  const citesExpected = results.filter((r) => r.cites_expected).length / n;
  const noMatch = results.filter((r) => r.no_match).length;
  ctx.log(`answers: hit@3 ${hit3.toFixed(3)}, MRR ${mrr.toFixed(3)}, key-term coverage ${coverage.toFixed(3)}, median answer ${median(chars)} chars`);
  const row = (metric: string, unit: string, better: Row['better'], v: number): Row => ({ bench: 'answers', metric, unit, better, parley: v, baseline: null, direct: null });
  const rows: Row[] = [
    row('retrieval hit@3', 'share', 'higher', hit3),
    row('retrieval MRR (first 10)', 'score', 'higher', mrr),
    row('answer key-term coverage, mean', 'share', 'higher', coverage),
    row('answers with every key term', 'share', 'higher', full),
    row('answers citing an expected document', 'share', 'higher', citesExpected),
    row('"nothing found" answers', 'count', 'lower', noMatch),
    row('answer length, median', 'chars', 'none', median(chars)),
    row('answer length, mean', 'chars', 'none', mean(chars)),
    row('answer length, max', 'chars', 'none', Math.max(...chars)),
  ];
  return {
    name: 'answers', rows, config, results: { questions: results },
    charts: [
      { title: 'Retrieval and answers', unit: 'share', groups: [
        { label: 'hit@3', values: { parley: hit3 } }, { label: 'MRR', values: { parley: mrr } }, { label: 'key-term coverage', values: { parley: coverage } },
      ] },
    ],
    notes: [
      'builtin model, BM25 retrieval (SQLite FTS5); quality numbers are deterministic and do not depend on host load.',
      'coverage counts a key term when the answer contains it case-insensitively; per-question answers and missing terms are in bench/results/answers.json.',
    ],
  };
}
