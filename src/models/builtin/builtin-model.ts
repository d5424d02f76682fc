/**
 * The `builtin` model (DESIGN.md "Models"): an offline, deterministic, extractive agent model. It answers
 * from the passages retrieved for the turn by quoting the sentences that best cover the question's terms
 * (Porter2 stems, weighted by rarity), each followed by a `[n]` citation marker, and streams the answer
 * word by word. bench/benchmarks/answers.ts measures it. It needs no network and no
 * key, so the service runs and the tests pass without an upstream.
 */
import { createHash } from 'node:crypto';
import type { AbortLike, ModelMessage, ModelPart, ModelProvider, ModelTurnInput, Passage } from '../port.js';
import { splitSentences } from '../../text/sentences.js';
import { STOPWORDS } from '../../text/stopwords.js';
import { contentTerms, stemSet, words } from '../../text/terms.js';
import { inProcessTokenCounter, type TokenCounter } from '../token-counter.js';

/** Options of the builtin model. */
export interface BuiltinModelOptions {
  /**
   * Pause between streamed words, in milliseconds. `0` (default) only yields to the event loop
   * (`setImmediate`) between words, so concurrent conversations interleave without slowing down.
   */
  wordDelayMs?: number;
  /** Counts usage tokens; default: in this thread. The server passes a worker-backed counter. */
  tokens?: TokenCounter;
}

/** The reply when no passage sentence matches the question. Other code and tests rely on it verbatim. */
export const NO_MATCH_ANSWER = 'I could not find anything about that in the knowledge base.';

/** Lead line put before an answer made of 2+ sentences. */
export const MULTI_SENTENCE_LEAD = 'Here is what the knowledge base says:';

/** Reply to a greeting that carries no question. */
export const GREETING_ANSWER = 'Hello! Ask me a question and I will look it up in the knowledge base.';

/** Reply to thanks that carries no question. */
export const THANKS_ANSWER = "You're welcome! Is there anything else I can help you with?";

/**
 * What the builtin model says when it hands the conversation to a person (then it calls the
 * `handoff_to_human` tool). Other code and tests rely on it verbatim.
 */
export const HANDOFF_ANSWER = "I'll connect you with a person from our team. They will answer here shortly.";

/** The tool the builtin model calls when the visitor asks for a person (src/tools/handoff-to-human.ts). */
const HANDOFF_TOOL = 'handoff_to_human';

/** Who a visitor may ask for. */
const PERSON = String.raw`(?:a |an |the |some |your |one of your |real |live |actual )*(?:human|person|people|operator|representative|rep|someone|somebody|staff|support team|team member)s?`;

/**
 * Rules of "the visitor asks for a person", on the question's text (case-insensitive):
 * - a verb of contact with a person: `talk to a human`, `speak with someone`, `connect me to an operator`,
 *   `transfer me to a representative`, `put me through to a person`;
 * - asking to get one: `I want a human`, `can I get a real person`, `I need to talk to someone`
 *   (not `agent` here: "I need an agent that..." is about the product);
 * - the bare request: `human`, `operator please`, `a real person!`.
 */
const HANDOFF_RULES: readonly RegExp[] = [
  new RegExp(String.raw`\b(?:talk|speak|chat|connect|transfer|put)\b(?: me)?(?: back)? (?:to|with|through to) ${PERSON}\b`, 'i'),
  new RegExp(String.raw`\b(?:want|need|get|see|reach|ask for|request)\b (?:to (?:talk|speak|chat) (?:to|with) )?(?:a |an |the |some |real |live |actual )*(?:human|person|operator|representative|someone|somebody)\b(?![-'])`, 'i'),
  new RegExp(String.raw`^\s*${PERSON}(?: please)?[\s.!?]*$`, 'i'),
];

/** True when the visitor's text asks to be handed to a person (HANDOFF_RULES). */
export function asksForPerson(text: string): boolean {
  return HANDOFF_RULES.some((r) => r.test(text));
}

/** At most this many sentences are quoted. */
const MAX_SENTENCES = 3;
/** Soft cap on the quoted sentences' total length, in characters (citation markers, labels and lead excluded). */
const MAX_ANSWER_CHARS = 700;
/** A single sentence longer than this is cut at a word boundary and ends with an ellipsis. */
const MAX_SENTENCE_CHARS = 400;
/** A sentence after the first is quoted only when its value is at least this share of the first one's. */
const MIN_VALUE_SHARE = 0.35;
/** Weight kept by a question term a sentence repeats (already covered by an earlier pick). */
const REPEAT_WEIGHT = 0.25;

/** Greeting words; never topic terms. */
const GREETING_WORDS = new Set('hi hello hey hiya howdy greetings hallo bonjour hola'.split(' '));
/** Thanks words; never topic terms. */
const THANKS_WORDS = new Set('thanks thank thx cheers'.split(' '));
/** Words that may accompany a greeting or thanks without making it a question. */
const SMALL_TALK_FILLER = new Set('good morning afternoon evening day there again lot everyone team bot'.split(' '));
/** Never topic terms of a question. */
const NOT_TERMS: ReadonlySet<string> = new Set([...GREETING_WORDS, ...THANKS_WORDS]);

const FENCE_RE = /^(?:```|~~~)/;
const HEADING_RE = /^#{1,6}\s/;
const BULLET_RE = /^(?:[-*+]|\d{1,3}[.)])\s+/;
const TABLE_RULE_RE = /^\|?\s*:?-{3,}/;
/** `name {type} description` of an API parameter list (the Node.js docs style). */
const PARAM_RE = /^([\w$.[\]'"-]+)\s+\{[^}]*\}\s*(.*)$/;
/** `Returns: {type} description` of an API reference. */
const RETURNS_RE = /^Returns:\s*\{[^}]*\}\s*(.*)$/;
/** A line that starts like JavaScript or shell code, a comment, or a closing bracket. */
const CODE_START_RE = /^(?:\/\/|\/\*|\*\/|#!|\$ |[}\])]|(?:import|export|const|let|var|function|class|return|await|async|if|for|while|try|catch|throw|new|require|module\.exports)\b[^.!?]*[=({;'"`]|[\w$.]+\s*\(.*\)\s*;?$)/;
/** A line that ends like code: `{`, `;`, `(`, `[`, `,` or an arrow. */
const CODE_END_RE = /(?:[{;([,]|=>)$/;
/** Code punctuation. */
const CODE_CHARS_RE = /[{}()[\];=<>|&$`]/g;

/**
 * True when a line reads as code rather than prose: it starts with a keyword and code punctuation, a
 * comment or a closing bracket, is a bare call, ends with `{` `;` `(` `[` `,` or `=>`, holds `=>` or
 * `===`, or is short and dense in code punctuation (> 1 in 10 characters).
 */
function codeLike(line: string): boolean {
  const t = line.trim();
  if (CODE_START_RE.test(t) || CODE_END_RE.test(t) || /=>|===|!==|\)\s*\{/.test(t)) return true;
  const symbols = t.match(CODE_CHARS_RE)?.length ?? 0;
  return symbols / Math.max(1, t.length) > 0.1 && t.split(/\s+/).length < 14;
}

/** True when every `(` and `[` of `text` is closed (a sentence cut inside brackets is not quoted). */
function balanced(text: string): boolean {
  let round = 0;
  let square = 0;
  for (const ch of text) {
    if (ch === '(') round++;
    else if (ch === ')') round--;
    else if (ch === '[') square++;
    else if (ch === ']') square--;
  }
  return round === 0 && square === 0;
}

/** A quotable sentence of a passage: its text, and whether it is the passage's first prose sentence. */
interface PassageSentence {
  text: string;
  first: boolean;
}

/**
 * The prose sentences of a passage. Blocks are separated by blank lines; fenced code, markdown headings,
 * table rules, code-like lines (see codeLike), `Stability:` notes, sentences ending in `:` (they introduce
 * code or a list not quoted) and sentences with unclosed brackets are skipped; `Returns: {type} text`
 * becomes `Returns text` (4+ words) or is dropped; a parameter line
 * `name {type} description` becomes `name: description` when the description has 4+ words and is
 * dropped otherwise; list items are their own paragraphs; a line that starts with a lower-case letter
 * after one that ends without punctuation continues it (hard-wrapped text); paragraphs are cut into
 * sentences by the shared splitter (src/text/sentences.ts).
 */
function passageSentences(text: string): PassageSentence[] {
  const out: PassageSentence[] = [];
  let para: string[] = [];
  let inFence = false;
  const flush = (): void => {
    if (para.length === 0) return;
    for (const s of splitSentences(para.join(' '))) {
      const t = s.text.trim();
      if (t.length > 0 && !codeLike(t) && !t.endsWith(':') && balanced(t)) out.push({ text: t, first: out.length === 0 });
    }
    para = [];
  };
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.trim();
    if (FENCE_RE.test(line)) {
      flush();
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    if (line.length === 0 || HEADING_RE.test(line) || TABLE_RULE_RE.test(line) || line.startsWith('Stability:') || codeLike(line)) {
      flush();
      continue;
    }
    const returns = RETURNS_RE.exec(line);
    if (returns !== null) {
      flush();
      const description = returns[1] ?? '';
      if (description.split(/\s+/).length >= 4) para.push(`Returns ${description.replace(/^(?:The|A|An)\b/, (a) => a.toLowerCase())}`);
      flush();
      continue;
    }
    const param = PARAM_RE.exec(line);
    if (param !== null) {
      flush();
      const description = (param[2] ?? '').replace(/^Default:\s*\S+\s*/, '');
      if (description.split(/\s+/).length >= 4) para.push(`${param[1]}: ${description}`);
      flush();
      continue;
    }
    if (BULLET_RE.test(line)) {
      flush();
      line = line.replace(BULLET_RE, '');
    } else if (para.length > 0 && /[.!?:;]$/.test(para[para.length - 1] ?? '') || !/^\p{Ll}/u.test(line)) {
      flush();
    }
    para.push(line);
  }
  flush();
  return out;
}

/**
 * The API a passage's section documents, from the last level of its heading path, for a label in
 * front of its first quoted sentence: `fs.readFile(path[, options], callback)` -> `fs.readFile()`,
 * `Class: http.Agent` -> `http.Agent`, `Event: 'drain'` -> `The 'drain' event`, `process.env` as is.
 * Undefined for a heading that names no API (`Readable streams`).
 */
export function apiLabel(heading: string): string | undefined {
  const last = heading.split(' > ').at(-1)?.trim() ?? '';
  const event = /^Event:\s*(.+)$/.exec(last);
  if (event) return `The ${event[1]} event`;
  const bare = last.replace(/^(?:Class|Static method|Interface|Method|Property):\s*/, '');
  const call = /^(?:new\s+)?([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*\(.*\)$/.exec(bare);
  if (call) return `${call[1]}()`;
  if (/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(bare) || (bare !== last && /^[A-Za-z_$][\w$]*$/.test(bare))) return bare;
  return undefined;
}

function clip(sentence: string): string {
  if (sentence.length <= MAX_SENTENCE_CHARS) return sentence;
  const cut = sentence.slice(0, MAX_SENTENCE_CHARS);
  const space = cut.lastIndexOf(' ');
  return (space > MAX_SENTENCE_CHARS / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:]+$/, '') + '…';
}

interface Candidate {
  passage: number;
  sentence: number;
  text: string;
  /** Question terms (stems) the sentence or its section's API label holds. */
  terms: Set<string>;
  /** Order-independent part of the value: passage rank, heading match, first sentence of a section. */
  bonus: number;
}

/** The question of the step: content of the last `user` message, or `''`. */
function lastUserContent(messages: ModelMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m !== undefined && m.role === 'user') return m.content;
  }
  return '';
}

/**
 * Candidate sentences of every passage that hold at least one question term, and the weight of each
 * question term: ln(1 + S / df) over the S prose sentences of the passages (df: sentences holding it,
 * at least 1), so a term every sentence repeats counts less than the one that singles the answer out.
 */
function candidates(terms: Set<string>, passages: Passage[]): { cands: Candidate[]; weight: Map<string, number> } {
  const all: Omit<Candidate, 'bonus'>[] = [];
  const bonuses: number[] = [];
  const df = new Map<string, number>();
  let sentences = 0;
  const seen = new Set<string>();
  passages.forEach((p, pi) => {
    // Loops run over the passage's words, never over the question's terms: a 32,000-character
    // question can hold thousands of terms, a passage sentence only a few dozen words.
    const label = apiLabel(p.heading);
    const labelStems = label === undefined ? new Set<string>() : stemSet(label.replace(/([a-z])([A-Z])/g, '$1 $2') + ' ' + label);
    let headingHits = 0;
    for (const h of stemSet(`${p.title} ${p.heading}`)) if (terms.has(h)) headingHits++;
    for (const [si, ps] of passageSentences(p.text).entries()) {
      sentences++;
      const stems = stemSet(ps.text);
      const hit = new Set<string>();
      for (const st of stems) if (terms.has(st)) hit.add(st);
      for (const st of labelStems) if (terms.has(st)) hit.add(st);
      for (const t of hit) df.set(t, (df.get(t) ?? 0) + 1);
      if (hit.size === 0) continue;
      const text = clip(ps.text);
      const key = text.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      all.push({ passage: pi, sentence: si, text, terms: hit });
      // A section's opening sentence usually says what its API does; more so when its heading matches.
      const opening = ps.first && label !== undefined ? (headingHits > 0 ? 0.6 : 0.3) : 0;
      bonuses.push(0.3 / (pi + 1) + Math.min(0.6, 0.2 * headingHits) + opening - (text.length < 30 ? 0.5 : 0));
    }
  });
  const weight = new Map<string, number>();
  for (const t of terms) weight.set(t, Math.log(1 + Math.max(1, sentences) / Math.max(1, df.get(t) ?? 1)));
  return { cands: all.map((c, i) => ({ ...c, bonus: bonuses[i] ?? 0 })), weight };
}

/**
 * Greedy selection. A candidate's value is the weight of the question terms it adds (not covered by
 * sentences already chosen), plus REPEAT_WEIGHT of the weight of those it repeats, plus its bonus. The
 * best value is taken first; after it, a candidate must add a term or directly follow a chosen sentence
 * of the same passage, must hold 2+ question terms unless its passage is already quoted, and is taken only while its value reaches MIN_VALUE_SHARE of the first pick's.
 * Stops at MAX_SENTENCES or when the next sentence would pass MAX_ANSWER_CHARS. Ties break on passage
 * then sentence order. The result is in passage then sentence order (a readable order: best passage first).
 */
function select(cands: Candidate[], weight: Map<string, number>): Candidate[] {
  const pool = [...cands].sort((a, b) => a.passage - b.passage || a.sentence - b.sentence);
  const chosen: Candidate[] = [];
  const covered = new Set<string>();
  let chars = 0;
  let firstValue = 0;
  while (chosen.length < MAX_SENTENCES && pool.length > 0) {
    let bestIdx = -1;
    let bestValue = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < pool.length; i++) {
      const c = pool[i];
      if (c === undefined) continue;
      if (chosen.length > 0 && chars + c.text.length > MAX_ANSWER_CHARS) continue;
      let gain = 0;
      let repeat = 0;
      for (const t of c.terms) {
        const w = weight.get(t) ?? 0;
        if (covered.has(t)) repeat += w;
        else gain += w;
      }
      if (chosen.length > 0) {
        const follows = chosen.some((k) => k.passage === c.passage && k.sentence === c.sentence - 1);
        const samePassage = chosen.some((k) => k.passage === c.passage);
        // A lone rare word is weak evidence in a passage nothing else was quoted from.
        if ((gain === 0 && !follows) || (c.terms.size < 2 && !samePassage)) continue;
      }
      const value = gain + REPEAT_WEIGHT * repeat + c.bonus;
      if (value > bestValue) {
        bestValue = value;
        bestIdx = i;
      }
    }
    if (bestIdx < 0) break;
    if (chosen.length === 0) firstValue = bestValue;
    else if (bestValue < MIN_VALUE_SHARE * firstValue) break;
    const [pick] = pool.splice(bestIdx, 1);
    if (pick === undefined) break;
    chosen.push(pick);
    chars += pick.text.length;
    for (const t of pick.terms) covered.add(t);
  }
  return chosen.sort((a, b) => a.passage - b.passage || a.sentence - b.sentence);
}

/** `sentence` with its citation marker before the final `.`/`!`/`?`, e.g. `Streams are fast [2].` */
function cite(sentence: string, n: number): string {
  const m = /[.!?]$/.exec(sentence);
  if (m === null) return `${sentence} [${n}]`;
  return `${sentence.slice(0, -1)} [${n}]${m[0]}`;
}

/** The composed answer and the 0-based indexes of the passages it cites (ascending). */
interface Composed {
  text: string;
  cited: number[];
}

/**
 * `sentence` with the API label of its passage in front (`fs.readFile(): Asynchronously reads…`) when
 * the passage has one and the sentence does not already name it.
 */
function labelled(sentence: string, label: string | undefined): string {
  if (label === undefined) return sentence;
  const name = /([A-Za-z_$][\w$]*)(?:\(\))?$/.exec(label.replace(/ event$/, '').replace(/['"]/g, ''))?.[1] ?? label;
  if (sentence.toLowerCase().includes(name.toLowerCase())) return sentence;
  return `${label}: ${sentence}`;
}

function compose(input: ModelTurnInput): Composed {
  const question = lastUserContent(input.messages);
  const ws = words(question);
  const greets = ws.some((w) => GREETING_WORDS.has(w));
  const thanks = ws.some((w) => THANKS_WORDS.has(w));
  const smallTalkOnly = ws.every(
    (w) =>
      w.length <= 2 || GREETING_WORDS.has(w) || THANKS_WORDS.has(w) || SMALL_TALK_FILLER.has(w) || STOPWORDS.has(w),
  );
  if ((greets || thanks) && smallTalkOnly) {
    return { text: thanks && !greets ? THANKS_ANSWER : GREETING_ANSWER, cited: [] };
  }
  const terms = contentTerms(question, { exclude: NOT_TERMS });
  if (terms.size === 0) return { text: NO_MATCH_ANSWER, cited: [] };
  const { cands, weight } = candidates(terms, input.passages);
  const chosen = select(cands, weight);
  if (chosen.length === 0) return { text: NO_MATCH_ANSWER, cited: [] };
  const labelledPassages = new Set<number>();
  const body = chosen.map((c) => {
    let text = c.text;
    if (!labelledPassages.has(c.passage)) {
      labelledPassages.add(c.passage);
      text = labelled(text, apiLabel(input.passages[c.passage]?.heading ?? ''));
    }
    return cite(text, c.passage + 1);
  }).join(' ');
  const cited = [...new Set(chosen.map((c) => c.passage))];
  return { text: chosen.length >= 2 ? `${MULTI_SENTENCE_LEAD} ${body}` : body, cited };
}

/**
 * Cut `text` to the longest whole-word prefix of at most `max` tokens (o200k_base). Used to honour
 * `maxOutputTokens`; returns the text unchanged when it fits.
 */
function abortError(signal: AbortLike): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const err = new Error('The operation was aborted.');
  err.name = 'AbortError';
  return err;
}

/** Wait `ms` (or one `setImmediate` turn when `ms` <= 0); resolves early when `signal` aborts. */
function pause(ms: number, signal: AbortLike): Promise<void> {
  if (ms <= 0) return new Promise((resolve) => setImmediate(resolve));
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Create the `builtin` model provider.
 *
 * `stream(input, signal, onPart)`:
 * - Question = the last `user` message. Terms = its words minus stopwords (src/text/stopwords.ts) and
 *   words of <= 2 chars, as Porter2 stems (src/text/terms.ts: `listeners` matches `listening`).
 * - Each passage (best first) is split into prose sentences (passageSentences: no code, no bare
 *   parameter lists, no lead-ins ending in `:`). A question term weighs ln(1 + S / df) over the S
 *   sentences (df: sentences holding it); a sentence also holds the terms of its section's API label
 *   (apiLabel). Sentences are chosen greedily (select): the best value first (new term weight, plus a
 *   quarter of repeated term weight, plus bonuses for passage rank, a heading that matches the question
 *   and the opening sentence of an API section), then only sentences that add a term (or continue a
 *   chosen one), hold 2+ terms unless their passage is already quoted, and reach 35% of the first
 *   value; at most 3 sentences, about 700 chars. They are output in passage then sentence order, each
 *   with a `[n]` marker (n = 1-based position of its passage in `input.passages`), the first sentence of
 *   a passage with an API label prefixed `label: ` unless it names the API already. With 2+ sentences
 *   the answer starts with `Here is what the knowledge base says:`.
 * - A greeting/thanks without terms gets a short friendly reply; otherwise no matching sentence gives
 *   exactly `I could not find anything about that in the knowledge base.` with no citations.
 * - Emits one `text-delta` per word including its trailing whitespace (deltas concatenate to the answer),
 *   returning to the event loop between words (`setImmediate`, or `setTimeout(wordDelayMs)` when > 0);
 *   then `usage` {input_tokens: countMessageTokens(messages) + tokens of all passage texts, output_tokens:
 *   countTokens(answer)} and `finish` {reason: 'stop', passagesUsed: chunk ids of the cited passages, in
 *   passage order}. When `input.maxOutputTokens` is set and the answer is longer, it is cut to whole words
 *   within the cap and finish reason is `length` (passagesUsed then lists only markers still present).
 * - Hands off: when the agent offers the `handoff_to_human` tool and the question asks for a person
 *   (`asksForPerson`), it streams HANDOFF_ANSWER, then emits one `tool-call` of `handoff_to_human` with
 *   `{"reason":"The visitor asked for a person."}` and finishes with reason `tool_calls`. It calls no other
 *   tool. Deterministic: same input, same parts (history and earlier answers are ignored).
 * - Rejects with `signal.reason` (or an Error named `AbortError`) when `signal` is aborted, checked before
 *   every word, and stops promptly during a word delay.
 *
 * @param opts.wordDelayMs pause between words in ms (default 0).
 */
export function createBuiltinModel(opts: BuiltinModelOptions = {}): ModelProvider {
  const wordDelayMs = Math.max(0, opts.wordDelayMs ?? 0);
  const tokens = opts.tokens ?? inProcessTokenCounter;
  return {
    name: 'builtin',
    async stream(input: ModelTurnInput, signal: AbortLike, onPart: (part: ModelPart) => void): Promise<void> {
      if (signal.aborted) throw abortError(signal);
      const question = lastUserContent(input.messages);
      if (input.tools.some((t) => t.name === HANDOFF_TOOL) && asksForPerson(question)) {
        for (const delta of HANDOFF_ANSWER.match(/\S+\s*/g) ?? []) {
          if (signal.aborted) throw abortError(signal);
          onPart({ type: 'text-delta', delta });
          await pause(wordDelayMs, signal);
        }
        if (signal.aborted) throw abortError(signal);
        const [inputTokens, outputTokens] = await Promise.all([tokens.count(input.messages, []), tokens.count([], [HANDOFF_ANSWER])]);
        onPart({ type: 'tool-call', call: { id: `call_${createHash('sha256').update(question).digest('hex').slice(0, 16)}`, name: HANDOFF_TOOL, arguments: JSON.stringify({ reason: 'The visitor asked for a person.' }) } });
        onPart({ type: 'usage', usage: { input_tokens: inputTokens, output_tokens: outputTokens } });
        onPart({ type: 'finish', reason: 'tool_calls', passagesUsed: [] });
        return;
      }
      const composed = compose(input);
      let answer = composed.text;
      let reason: 'stop' | 'length' = 'stop';
      let cited = composed.cited;
      if (input.maxOutputTokens !== undefined && input.maxOutputTokens >= 0) {
        const cut = await tokens.truncate(answer, input.maxOutputTokens);
        if (cut.truncated) {
          answer = cut.text;
          reason = 'length';
          cited = cited.filter((i) => answer.includes(`[${i + 1}]`));
        }
      }

      const parts = answer.match(/\S+\s*/g) ?? [];
      for (const delta of parts) {
        if (signal.aborted) throw abortError(signal);
        onPart({ type: 'text-delta', delta });
        await pause(wordDelayMs, signal);
      }
      if (signal.aborted) throw abortError(signal);

      const [inputTokens, outputTokens] = await Promise.all([
        tokens.count(input.messages, input.passages.map((p) => p.text)),
        tokens.count([], [answer]),
      ]);
      if (signal.aborted) throw abortError(signal);
      onPart({ type: 'usage', usage: { input_tokens: inputTokens, output_tokens: outputTokens } });
      const passagesUsed: string[] = [];
      for (const i of cited) {
        const id = input.passages[i]?.chunk_id;
        if (id !== undefined && !passagesUsed.includes(id)) passagesUsed.push(id);
      }
      onPart({ type: 'finish', reason, passagesUsed });
    },
  };
}
