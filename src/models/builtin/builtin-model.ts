/**
 * The `builtin` model (DESIGN.md "Models"): an offline, deterministic, extractive agent model. It answers
 * from the passages retrieved for the turn by quoting the sentences that best match the question, each
 * followed by a `[n]` citation marker, and streams the answer word by word. It needs no network and no
 * key, so the service runs and the tests pass without an upstream.
 */
import { createHash } from 'node:crypto';
import type { ModelMessage, ModelPart, ModelProvider, ModelTurnInput, Passage } from '../port.js';
import { splitSentences } from '../../text/sentences.js';
import { STOPWORDS } from '../../text/stopwords.js';
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
/** Soft cap on the quoted sentences' total length, in characters (citation markers and lead excluded). */
const MAX_ANSWER_CHARS = 700;
/** A single sentence longer than this is cut at a word boundary and ends with an ellipsis. */
const MAX_SENTENCE_CHARS = 400;

/** Greeting words; never topic terms. */
const GREETING_WORDS = new Set('hi hello hey hiya howdy greetings hallo bonjour hola'.split(' '));
/** Thanks words; never topic terms. */
const THANKS_WORDS = new Set('thanks thank thx cheers'.split(' '));
/** Words that may accompany a greeting or thanks without making it a question. */
const SMALL_TALK_FILLER = new Set('good morning afternoon evening day there again lot everyone team bot'.split(' '));

const WORD_RE = /[\p{L}\p{N}]+/gu;

function words(text: string): string[] {
  return text.toLowerCase().match(WORD_RE) ?? [];
}

/**
 * Light suffix stemmer (a tiny subset of Porter's step 1, M. F. Porter 1980): first plurals (`-ies`->`-y`,
 * `-es` after s/x/z/ch/sh, `-s` but not `-ss`/`-us`/`-is`), then `-ing` / `-ed` (not `-eed`), undoubling
 * a final consonant other than l/s/z, then a final silent `-e`; a stem is never shorter than 3 letters.
 * So `streams`, `streaming`, `streamed` -> `stream` and `cache`, `caches`, `cached` -> `cach`.
 */
function stem(word: string): string {
  let w = word;
  if (w.length > 4 && w.endsWith('ies')) {
    w = w.slice(0, -3) + 'y';
  } else if (w.length > 4 && /(?:[sxz]|ch|sh)es$/.test(w) && w.length - 2 >= 3) {
    w = w.slice(0, -2);
  } else if (w.length > 3 && w.endsWith('s') && !/(?:ss|us|is)$/.test(w)) {
    w = w.slice(0, -1);
  }
  if (w.endsWith('ing') && w.length - 3 >= 3) {
    w = undouble(w.slice(0, -3));
  } else if (w.endsWith('ed') && !w.endsWith('eed')) {
    if (w.length - 2 >= 3) w = undouble(w.slice(0, -2));
    else if (w.length - 1 >= 3) w = w.slice(0, -1); // used -> use
  }
  if (w.length > 3 && w.endsWith('e') && !w.endsWith('ee')) w = w.slice(0, -1);
  return w;
}

function undouble(w: string): string {
  const n = w.length;
  if (n >= 4 && w[n - 1] === w[n - 2] && !/[aeioulsz]/.test(w[n - 1] ?? '')) return w.slice(0, -1);
  return w;
}

/** Distinct stemmed content terms of `text`: words minus stopwords and words of <= 2 chars. */
function contentTerms(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of words(text)) {
    if (w.length <= 2 || STOPWORDS.has(w) || GREETING_WORDS.has(w) || THANKS_WORDS.has(w)) continue;
    out.add(stem(w));
  }
  return out;
}

/** All stems of `text` (no stopword filtering), for matching question terms against. */
function stemSet(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of words(text)) out.add(stem(w));
  return out;
}

const FENCE_RE = /^(?:```|~~~)/;
const HEADING_RE = /^#{1,6}\s/;
const BULLET_RE = /^(?:[-*+]|\d{1,3}[.)])\s+/;
const TABLE_RULE_RE = /^\|?\s*:?-{3,}/;

/**
 * Split passage text into sentences: fenced code, markdown headings and table rules are skipped, list
 * items are their own paragraphs, hard-wrapped lines are joined, and paragraphs are cut into sentences by
 * the shared splitter (src/text/sentences.ts).
 */
function passageSentences(text: string): string[] {
  const out: string[] = [];
  let para: string[] = [];
  let inFence = false;
  const flush = (): void => {
    if (para.length === 0) return;
    for (const s of splitSentences(para.join(' '))) {
      const t = s.text.trim();
      if (t.length > 0) out.push(t);
    }
    para = [];
  };
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (FENCE_RE.test(line)) {
      flush();
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    if (line.length === 0 || HEADING_RE.test(line) || TABLE_RULE_RE.test(line)) {
      flush();
      continue;
    }
    if (BULLET_RE.test(line)) {
      flush();
      para.push(line.replace(BULLET_RE, ''));
      continue;
    }
    para.push(line);
  }
  flush();
  return out;
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
  terms: Set<string>;
  score: number;
}

/** The question of the step: content of the last `user` message, or `''`. */
function lastUserContent(messages: ModelMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m !== undefined && m.role === 'user') return m.content;
  }
  return '';
}

/** Scored candidate sentences of every passage that contain at least one question term. */
function candidates(terms: Set<string>, passages: Passage[]): Candidate[] {
  const out: Candidate[] = [];
  const seen = new Set<string>();
  passages.forEach((p, pi) => {
    // Bonuses stay below 1 in total so they only break ties between equal term counts.
    const rankBonus = 0.3 / (pi + 1);
    // Loops run over the passage's words, never over the question's terms: a 32,000-character
    // question can hold thousands of terms, a passage sentence only a few dozen words.
    const headingStems = stemSet(`${p.title} ${p.heading}`);
    let headingHits = 0;
    for (const h of headingStems) if (terms.has(h)) headingHits++;
    const headingBonus = Math.min(0.45, 0.15 * headingHits);
    passageSentences(p.text).forEach((raw, si) => {
      const stems = stemSet(raw);
      const hit = new Set<string>();
      for (const st of stems) if (terms.has(st)) hit.add(st);
      if (hit.size === 0) return;
      const text = clip(raw);
      const key = text.toLowerCase();
      if (seen.has(key)) return;
      seen.add(key);
      out.push({ passage: pi, sentence: si, text, terms: hit, score: hit.size + rankBonus + headingBonus });
    });
  });
  return out;
}

/**
 * Greedy selection: best score first, then whichever candidate adds the most not-yet-covered terms; a
 * candidate that covers nothing new is taken only if it matches 2+ terms. Stops at `MAX_SENTENCES` or
 * when the next sentence would exceed `MAX_ANSWER_CHARS`. Ties break on passage then sentence order.
 */
function select(cands: Candidate[]): Candidate[] {
  const pool = [...cands].sort(
    (a, b) => b.score - a.score || a.passage - b.passage || a.sentence - b.sentence,
  );
  const chosen: Candidate[] = [];
  const covered = new Set<string>();
  let chars = 0;
  while (chosen.length < MAX_SENTENCES && pool.length > 0) {
    let bestIdx = -1;
    let bestGain = -1;
    for (let i = 0; i < pool.length; i++) {
      const c = pool[i];
      if (c === undefined) continue;
      if (chosen.length > 0 && chars + c.text.length > MAX_ANSWER_CHARS) continue;
      let gain = 0;
      for (const t of c.terms) if (!covered.has(t)) gain++;
      if (chosen.length > 0 && gain === 0 && c.terms.size < 2) continue;
      if (gain > bestGain) {
        bestGain = gain;
        bestIdx = i; // pool is sorted, so the first with the highest gain has the best score
      }
    }
    if (bestIdx < 0) break;
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
  const terms = contentTerms(question);
  if (terms.size === 0) return { text: NO_MATCH_ANSWER, cited: [] };
  const chosen = select(candidates(terms, input.passages));
  if (chosen.length === 0) return { text: NO_MATCH_ANSWER, cited: [] };
  const body = chosen.map((c) => cite(c.text, c.passage + 1)).join(' ');
  const cited = [...new Set(chosen.map((c) => c.passage))];
  return { text: chosen.length >= 2 ? `${MULTI_SENTENCE_LEAD} ${body}` : body, cited };
}

/**
 * Cut `text` to the longest whole-word prefix of at most `max` tokens (o200k_base). Used to honour
 * `maxOutputTokens`; returns the text unchanged when it fits.
 */
function abortError(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const err = new Error('The operation was aborted.');
  err.name = 'AbortError';
  return err;
}

/** Wait `ms` (or one `setImmediate` turn when `ms` <= 0); resolves early when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
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
 * - Question = the last `user` message. Terms = its lower-cased words minus stopwords and words of
 *   <= 2 chars, lightly stemmed (`streams` matches `streaming`).
 * - Each passage (best first) is split into sentences; a sentence scores the number of distinct terms it
 *   holds, plus a bonus (< 1 in total) for the passage's rank and for terms in its title/heading. Up to 3
 *   sentences (about 700 chars) scoring >= 1 term are chosen, preferring coverage of distinct terms, and
 *   output in passage then sentence order, each with a `[n]` marker (n = 1-based position of its passage
 *   in `input.passages`). With 2+ sentences the answer starts with `Here is what the knowledge base says:`.
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
    async stream(input: ModelTurnInput, signal: AbortSignal, onPart: (part: ModelPart) => void): Promise<void> {
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
