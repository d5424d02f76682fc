/**
 * The safety check that runs on the finished text of an agent turn (SPEC.md 6.1 rule 2: when it fires
 * after streaming began, the turn sends a `replace` event whose delta is the verdict's `text`).
 *
 * Two layers, in this order:
 * 1. Blocked phrases (operator-configured). Any hit blocks the whole reply: the text becomes
 *    `blocked_message`. Blocking wins over redaction.
 * 2. PII / secret redaction (when `redact_pii`): e-mail addresses, Luhn-valid payment card numbers and
 *    API-key-like secrets are replaced in place by fixed placeholders.
 *
 * All patterns are compiled once at module load (blocked-phrase patterns once per distinct phrase list,
 * cached) and use bounded quantifiers with left-boundary lookbehinds, so a check is linear in the text
 * length: a 10 KB text takes a few tens of microseconds per pattern.
 */

/** Operator settings of the safety check. */
export interface SafetySettings {
  /**
   * Phrases that block the reply. Matched case-insensitively on Unicode NFKC-normalised text, as whole
   * words: a phrase edge that is a letter/digit must not touch another letter/digit/underscore
   * (so `ass` does not fire inside `class`). Whitespace inside a phrase matches any run of whitespace.
   * Empty or blank phrases are ignored.
   */
  blocked_phrases: string[];
  /** Replace e-mail addresses, Luhn-valid card numbers and API-key-like secrets with placeholders. */
  redact_pii: boolean;
  /** The whole reply when a blocked phrase fires. */
  blocked_message: string;
}

/** Defaults: no blocked phrases, PII redaction on, a polite refusal as the blocked message. */
export const DEFAULT_SAFETY: SafetySettings = Object.freeze({
  blocked_phrases: [],
  redact_pii: true,
  blocked_message: "I'm sorry, I can't help with that.",
}) as SafetySettings;

/** What a finding was about. `api_key` covers every secret kind (see `checkSafety`). */
export type SafetyFindingKind = 'blocked_phrase' | 'email' | 'card_number' | 'api_key';

/** One kind of finding and how many occurrences of it the text held. `count` >= 1. */
export interface SafetyFinding {
  kind: SafetyFindingKind;
  count: number;
}

/**
 * Result of `checkSafety`. `fired: false` means the text is to be kept exactly as it is. When fired,
 * `text` is the replacement text (the blocked message, or the text with redactions), `blocked` tells
 * which layer fired, and `findings` lists the kinds found with counts (kinds with count 0 are omitted;
 * order: blocked_phrase, email, card_number, api_key; a blocked verdict lists only `blocked_phrase`).
 */
export type SafetyVerdict =
  | { fired: false }
  | { fired: true; text: string; blocked: boolean; findings: SafetyFinding[] };

/** Placeholders written in place of redacted spans. */
export const REDACTION_PLACEHOLDERS = Object.freeze({
  email: '[redacted email]',
  card_number: '[redacted card number]',
  api_key: '[redacted secret]',
});

// ---------------------------------------------------------------------------------------------------
// Redaction patterns (compiled once).

/**
 * E-mail: local part of up to 64 atext-ish chars (RFC 5321 4.5.3.1.1 limit), then `@`, DNS labels of
 * up to 63 chars (RFC 1035), and an alphabetic TLD. The lookbehind keeps starts at token boundaries.
 */
const EMAIL_RE =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])/g;

/**
 * Card number candidates: 13 to 19 digits (ISO/IEC 7812-1 PAN length), with an optional single space
 * or dash between digits/groups. Not adjacent to further digits (also across one separator), so a
 * longer digit run is never cut into a "card".
 */
const CARD_RE = /(?<!\d[ -]?)\d(?:[ -]?\d){12,18}(?![ -]?\d)/g;

/**
 * API-key-like secrets, one alternation (one pass):
 * - `sk_` / `sk-` (Stripe secret keys, OpenAI keys incl. `sk-proj-`), `pk_live_` and `rk_` (Stripe
 *   publishable-live / restricted keys) followed by 20+ `[A-Za-z0-9_-]`;
 * - GitHub tokens: `ghp_` / `gho_` / `ghu_` / `ghs_` / `ghr_` + 30+ alphanumerics, and fine-grained
 *   `github_pat_` + 22+ `[A-Za-z0-9_]`;
 * - AWS access key ids: `AKIA` / `ASIA` + 16 `[0-9A-Z]`;
 * - Slack tokens: `xoxa-` / `xoxb-` / `xoxp-` / `xoxr-` + 10+ `[A-Za-z0-9-]`;
 * - JWT-looking tokens: `eyJ<b64url>.eyJ<b64url>.<b64url>` (a JSON header and payload, base64url).
 * Upper bounds are generous (4096) and every class excludes the next literal, so no backtracking blow-up.
 */
const SECRET_RE = new RegExp(
  '(?<![A-Za-z0-9_-])(?:' +
    [
      '(?:sk[_-]|pk_live_|rk_)[A-Za-z0-9_-]{20,4096}',
      'gh[opusr]_[A-Za-z0-9]{30,4096}',
      'github_pat_[A-Za-z0-9_]{22,4096}',
      '(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])',
      'xox[abpr]-[A-Za-z0-9-]{10,4096}',
      'eyJ[A-Za-z0-9_-]{2,8192}\\.eyJ[A-Za-z0-9_-]{2,8192}\\.[A-Za-z0-9_-]{0,8192}',
    ].join('|') +
    ')',
  'g',
);

/** Zero-width and soft-hyphen characters removed before phrase matching so they cannot split a phrase. */
const INVISIBLE_RE = /[\u00AD\u200B-\u200D\u2060\uFEFF]/g;

/**
 * Luhn (mod 10) check digit validation, the check-digit scheme of payment card numbers defined in
 * ISO/IEC 7812-1 (Annex B). `digits` holds only ASCII digits.
 */
function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

// ---------------------------------------------------------------------------------------------------
// Blocked phrases: one compiled regex per distinct phrase list (bounded cache).

const PHRASE_CACHE_MAX = 256;
const phraseCache = new Map<string, RegExp | null>();
const WORD_CHAR_RE = /[\p{L}\p{N}_]/u;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function normaliseForMatch(s: string): string {
  return s.normalize('NFKC').replace(INVISIBLE_RE, '');
}

function compilePhrases(phrases: string[]): RegExp | null {
  const key = JSON.stringify(phrases);
  const cached = phraseCache.get(key);
  if (cached !== undefined) return cached;
  const parts: string[] = [];
  for (const raw of phrases) {
    const p = normaliseForMatch(raw).trim();
    if (p.length === 0) continue;
    const body = p.split(/\s+/u).map(escapeRegExp).join('\\s+');
    const first = p[0] ?? '';
    const last = p[p.length - 1] ?? '';
    const pre = WORD_CHAR_RE.test(first) ? '(?<![\\p{L}\\p{N}_])' : '';
    const post = WORD_CHAR_RE.test(last) ? '(?![\\p{L}\\p{N}_])' : '';
    parts.push(pre + body + post);
  }
  // Longest first so overlapping phrases count once for the longer match.
  parts.sort((a, b) => b.length - a.length);
  const re = parts.length === 0 ? null : new RegExp(parts.join('|'), 'giu');
  if (phraseCache.size >= PHRASE_CACHE_MAX) {
    const oldest = phraseCache.keys().next().value;
    if (oldest !== undefined) phraseCache.delete(oldest);
  }
  phraseCache.set(key, re);
  return re;
}

function countMatches(re: RegExp, text: string): number {
  re.lastIndex = 0;
  let n = 0;
  while (re.exec(text) !== null) n++;
  re.lastIndex = 0;
  return n;
}

// ---------------------------------------------------------------------------------------------------

/**
 * Run the safety check on a finished reply.
 *
 * 1. Blocked phrases (see `SafetySettings.blocked_phrases`): on any hit the verdict is
 *    `{fired: true, blocked: true, text: settings.blocked_message, findings: [{kind:'blocked_phrase', count}]}`.
 * 2. Otherwise, when `settings.redact_pii`: secrets first (so digits inside a key are not taken for a
 *    card), then e-mail addresses, then card numbers. Replacements: `[redacted secret]`,
 *    `[redacted email]`, `[redacted card number]`. A card candidate (13-19 digits, optional single
 *    spaces/dashes between groups) is redacted only when it passes the Luhn check of ISO/IEC 7812-1;
 *    other digit runs (order numbers, phone numbers) are kept.
 *
 * Returns `{fired: false}` when nothing matched (the text is unchanged). Pure; never throws.
 *
 * @param text the finished reply text.
 * @param settings the agent's safety settings (`DEFAULT_SAFETY` when it has none).
 */
export function checkSafety(text: string, settings: SafetySettings): SafetyVerdict {
  if (settings.blocked_phrases.length > 0) {
    const re = compilePhrases(settings.blocked_phrases);
    if (re !== null) {
      const hits = countMatches(re, normaliseForMatch(text));
      if (hits > 0) {
        return {
          fired: true,
          text: settings.blocked_message,
          blocked: true,
          findings: [{ kind: 'blocked_phrase', count: hits }],
        };
      }
    }
  }
  if (!settings.redact_pii) return { fired: false };

  let out = text;
  let secrets = 0;
  let emails = 0;
  let cards = 0;

  out = out.replace(SECRET_RE, () => {
    secrets++;
    return REDACTION_PLACEHOLDERS.api_key;
  });
  if (out.includes('@')) {
    out = out.replace(EMAIL_RE, () => {
      emails++;
      return REDACTION_PLACEHOLDERS.email;
    });
  }
  out = out.replace(CARD_RE, (m) => {
    const digits = m.replace(/[ -]/g, '');
    if (!luhnValid(digits)) return m;
    cards++;
    return REDACTION_PLACEHOLDERS.card_number;
  });

  if (secrets + emails + cards === 0) return { fired: false };
  const findings: SafetyFinding[] = [];
  if (emails > 0) findings.push({ kind: 'email', count: emails });
  if (cards > 0) findings.push({ kind: 'card_number', count: cards });
  if (secrets > 0) findings.push({ kind: 'api_key', count: secrets });
  return { fired: true, text: out, blocked: false, findings };
}
