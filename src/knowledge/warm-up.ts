/**
 * The warm-up of an ingestion worker (PARLEY_INGEST_WARM_UP, off by default): Markdown documents built
 * here (no file, no network) go through the same decode, parse and chunk code as uploads, so that V8 has
 * compiled that code with its optimizing tier before the first real document arrives.
 *
 * Why: a fresh worker parses at about half its later speed while V8 compiles the parser, the chunker and
 * md4c's WebAssembly. Measured on this project's 2-core machine (2026-11-27), the Node.js API docs
 * (2.04 MB) through a new pool of 2 workers, no server: 0.46-0.51 s cold, 0.24-0.28 s after this warm-up,
 * 0.15-0.19 s once the same corpus went through before. The rest of the gap is type feedback only real
 * documents give. The cost: each warm worker keeps about 18 MiB of resident memory for as long as the
 * server runs, and its warm-up takes 0.25-0.35 s of one core (at the workers' nice value) at start.
 */

/** Key of the message a worker posts to its pool when its warm-up is done (see {@link WarmUpDone}). */
export const WARM_UP_DONE = 'parleyIngestWarmUpDone';

/** What a worker posts on its parent port after warming up: rounds parsed and the time it took, ms. */
export interface WarmUpDone {
  [WARM_UP_DONE]: { rounds: number; ms: number };
}

/** Whether a message from a worker is a {@link WarmUpDone}. */
export function isWarmUpDone(message: unknown): message is WarmUpDone {
  return typeof message === 'object' && message !== null && WARM_UP_DONE in message;
}

/** Size of one warm-up document, UTF-16 code units (at least). */
export const WARM_UP_DOCUMENT_CHARS = 8_000;

/**
 * Warm-up documents per round: many small documents rather than one large one, so that the code run once
 * per document (the tree walk's entry, the chunker's) is called often enough to be optimized too, and half
 * of them pure ASCII (one-byte strings) and half not (two-byte strings), as uploads are.
 */
export const WARM_UP_DOCUMENTS = 12;

/**
 * Rounds a worker parses the warm-up documents when warm-up is on (PARLEY_INGEST_WARM_UP's suggested value):
 * 6 x 12 x 8,000 characters, about 580 KB, 0.25-0.35 s of one core per worker here. More (8 rounds of up
 * to 2 MB per worker, or 20 rounds) gave no gain clear of the run-to-run noise; 1 to 3 rounds left the
 * first corpus slower in the pool (0.30-0.37 s against 0.24-0.30 s).
 */
export const WARM_UP_ROUNDS = 6;

const WORDS = [
  'stream', 'buffer', 'handle', 'request', 'socket', 'promise', 'callback', 'event', 'listener', 'signal',
  'worker', 'thread', 'message', 'channel', 'timeout', 'option', 'default', 'encoding', 'length', 'offset',
  'returns', 'emitted', 'closed', 'written', 'pending', 'resolved', 'rejected', 'deprecated', 'experimental',
  'the', 'a', 'of', 'when', 'is', 'and', 'to', 'in', 'that', 'with', 'for', 'before', 'after', 'each',
];

/** Seed of the first warm-up document; document i has seed + i. */
export const WARM_UP_SEED = 0x5eed;

/**
 * The {@link WARM_UP_DOCUMENTS} warm-up documents as UTF-8 bytes (what an upload hands the worker):
 * {@link warmUpMarkdown} of {@link WARM_UP_DOCUMENT_CHARS} with seeds {@link WARM_UP_SEED} + 0, 1, 2, ...
 * (odd seeds hold non-ASCII text, even ones are pure ASCII).
 */
export function warmUpDocuments(): Uint8Array[] {
  const encoder = new TextEncoder();
  return Array.from({ length: WARM_UP_DOCUMENTS }, (_, i) => encoder.encode(warmUpMarkdown(WARM_UP_DOCUMENT_CHARS, WARM_UP_SEED + i)));
}

/** A tiny linear congruential generator: the sample is the same on every start (deterministic). */
function generator(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * A Markdown document of at least `chars` UTF-16 code units shaped like API reference pages: headings of
 * levels 1 to 4 with code in them, HTML comments holding YAML, prose with inline code, emphasis, links,
 * reference links, entities and a few non-ASCII characters, bullet and ordered lists (nested), fenced
 * code blocks (backticks, tildes and indented), GFM tables, raw HTML blocks, images, autolinks and
 * definition-like lines: the branches of the parser and the chunker that the Node.js docs take.
 * Deterministic: the same `chars` and `seed` give the same text.
 *
 * @param chars minimum length, code units (an integer >= 1).
 * @param seed seed of the generator; an odd seed adds non-ASCII text (two-byte strings once decoded).
 * @throws RangeError when `chars` is not an integer >= 1.
 */
export function warmUpMarkdown(chars: number = WARM_UP_DOCUMENT_CHARS, seed = WARM_UP_SEED): string {
  if (!Number.isInteger(chars) || chars < 1) throw new RangeError(`warm-up document size must be an integer >= 1, got ${String(chars)}`);
  const random = generator(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const sentence = (words: number): string => {
    const parts: string[] = [];
    for (let i = 0; i < words; i++) {
      const w = pick(WORDS);
      const r = random();
      if (r < 0.08) parts.push(`\`${w}.${pick(WORDS)}()\``);
      else if (r < 0.12) parts.push(`*${w}*`);
      else if (r < 0.15) parts.push(`**${w}**`);
      else if (r < 0.18) parts.push(`[${w}](https://example.org/${w})`);
      else if (r < 0.2) parts.push(`[\`${w}\`][]`);
      else if (r < 0.22) parts.push(`&lt;${w}&gt;`);
      else if (r < 0.23 && (seed & 1) === 1) parts.push(`${w}\u00e9 \u2014 na\u00efve`);
      else parts.push(w);
    }
    const text = parts.join(' ');
    return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
  };
  const paragraph = (): string => {
    const lines: string[] = [];
    const n = 2 + Math.floor(random() * 4);
    for (let i = 0; i < n; i++) lines.push(sentence(6 + Math.floor(random() * 14)));
    return lines.join('\n');
  };
  const blocks: string[] = ['# Warm-up reference', '', paragraph(), ''];
  let length = 0;
  for (let section = 1; length < chars; section++) {
    const name = `${pick(WORDS)}${section}`;
    const out: string[] = [];
    out.push(`${'#'.repeat(2 + (section % 3))} \`${name}.${pick(WORDS)}(options[, callback])\``, '');
    out.push('<!-- YAML', `added: v${section % 20}.${section % 7}.0`, 'changes:', `  - version: v${section % 22}.0.0`, '    description: A change.', '-->', '');
    out.push(`* \`options\` {Object} ${sentence(5)}`, `  * \`${pick(WORDS)}\` {string} ${sentence(4)} **Default:** \`'utf8'\`.`,
      `  * \`${pick(WORDS)}\` {integer} ${sentence(6)}`, `* \`callback\` {Function}`, `* Returns: {Promise} ${sentence(5)}`, '');
    out.push(paragraph(), '', paragraph(), '');
    const kind = (section + seed) % 10;
    if (kind === 0) out.push('```mjs', `import { ${name} } from 'node:${pick(WORDS)}';`, '', `const x = await ${name}({ length: ${section} });`, 'console.log(x);', '```', '');
    else if (kind === 1) out.push('| Option | Type | Default |', '| :----- | :--: | ------: |', `| \`${pick(WORDS)}\` | {string} | \`'a'\` |`, `| \`${pick(WORDS)}\` | {number} | \`${section}\` |`, '');
    else if (kind === 2) out.push('1. ' + sentence(8), '2. ' + sentence(7), '   * ' + sentence(5), '     - [ ] ' + sentence(3), '3) ' + sentence(6), '');
    else if (kind === 3) out.push('<table>', `<tr><th>${pick(WORDS)}</th><th>${pick(WORDS)}</th></tr>`, `<tr><td>${section}</td><td>&amp; ${pick(WORDS)}</td></tr>`, '</table>', '');
    else if (kind === 4) out.push(`> ${sentence(9)}`, `> ${sentence(7)}`, '>', `> > ${sentence(4)}`, '', '```js', `const { ${name} } = require('node:${pick(WORDS)}');`, `${name}(() => {});`, '```', '');
    else if (kind === 5) out.push(`![${pick(WORDS)} diagram](https://example.org/${name}.png "A ${pick(WORDS)}")`, '', `See <https://example.org/${name}> and ~~${pick(WORDS)}~~ \\*not emphasis\\*.  `, `A hard break above; <br> and <kbd>Ctrl</kbd> inline.`, '');
    else if (kind === 6) out.push('~~~console', `$ node ${name}.js`, '\t' + sentence(3), '~~~', '', '    indented code line', '    another line', '');
    else if (kind === 7) out.push(Array.from({ length: 40 }, () => sentence(12)).join(' '), '');
    else if (kind === 8) out.push('```js', ...Array.from({ length: 60 }, (_, i) => `  ${pick(WORDS)}.${pick(WORDS)}(${i}); // ${pick(WORDS)}`), '```', '');
    else out.push(`${'#'.repeat(5 + (section % 2))} ${pick(WORDS)} <a id="${name}"></a>`, '', `Term ${section}`, `: ${sentence(6)}`, '', '***', '', `[\`${pick(WORDS)}\`]: https://example.org/${name}`, '');
    const block = out.join('\n');
    blocks.push(block);
    length += block.length;
  }
  blocks.push(`[\`${WORDS[0]!}\`]: https://example.org/ref`, '');
  return blocks.join('\n');
}
