import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

/** Header and field paths that must never reach a log line (API.md "Credentials"). */
const REDACT = [
  'req.headers.authorization',
  'req.headers["x-visitor-token"]',
  'headers.authorization',
  'authorization',
  'api_key',
  'secret',
  'token',
  'refresh_token',
  'password',
];

/**
 * The root pino logger: JSON lines with `level`, `time` (epoch ms), `msg`; children add `request_id`,
 * `conversation_id`, ... Secrets are censored by path (REDACT); URLs must be logged through
 * `redactUrl`.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { service: 'parley' }, redact: { paths: REDACT, censor: '[redacted]' } }, destination);
}

/** The API-key shape (API.md "Credentials": `sk_` + 36 base62), checksum not checked, so near-keys go too. */
const KEY_SHAPE = /sk_[0-9A-Za-z]{36}/g;
const KEY_REDACTED = 'sk_[redacted]';

/** `part` with every key-shaped string redacted, also when percent-encoding hides it (then the whole part goes). */
function redactKeys(part: string): string {
  const plain = part.replace(KEY_SHAPE, KEY_REDACTED);
  if (!part.includes('%')) return plain;
  let decoded: string;
  try { decoded = decodeURIComponent(part.replaceAll('+', ' ')); } catch { return plain; }
  return new RegExp(KEY_SHAPE.source).test(decoded) ? '[redacted]' : plain;
}

/**
 * `path?query` as it may be logged (API.md "Credentials": no secret or token is ever written to a
 * log): every query value replaced by `[redacted]` (tokens are passed in URLs), and any API-key-shaped
 * string (`sk_` + 36 base62) in a path segment or a query parameter name replaced by `sk_[redacted]`
 * (or the whole segment or name by `[redacted]` when percent-encoding hides the key).
 */
export function redactUrl(path: string, query: string): string {
  const safePath = path.split('/').map(redactKeys).join('/');
  if (!query) return safePath;
  const names = query.split('&').map((pair) => redactKeys(pair.split('=')[0] ?? ''));
  return `${safePath}?${names.map((n) => `${n}=[redacted]`).join('&')}`;
}
