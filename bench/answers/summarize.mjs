// Writes a text summary of bench/results/answers.json (rows, then one line per question with its
// retrieval rank, key-term coverage, missing terms and the answer): node bench/answers/summarize.mjs <out>
import { readFileSync, writeFileSync } from 'node:fs';
const out = process.argv[2];
if (!out) { console.error('usage: node bench/answers/summarize.mjs <output file>'); process.exit(2); }
const r = JSON.parse(readFileSync(new URL('../results/answers.json', import.meta.url), 'utf8'));
const lines = [`answers benchmark, ${r.mode} run, commit ${r.machine.git_commit}${r.machine.git_dirty ? ' (dirty tree)' : ''}, ${r.finished_at}`, ''];
for (const row of r.rows) lines.push(`${row.metric.padEnd(40)} ${String(Math.round(row.parley * 1000) / 1000).padStart(8)} ${row.unit}`);
lines.push('', 'per question: id | rank of the first expected document (search, k=10) | key-term coverage | missing terms', '');
for (const q of r.results.questions) {
  lines.push(`${q.id} | ${q.rank ?? '-'} | ${q.coverage.toFixed(2)} | ${q.key_terms_missing.join(', ')}`);
  lines.push(`    ${q.answer.replace(/\s+/g, ' ')}`);
}
writeFileSync(out, `${lines.join('\n')}\n`);
