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

/** `path?query` with every query value replaced by `[redacted]`, so tokens passed in URLs never reach logs. */
export function redactUrl(path: string, query: string): string {
  if (!query) return path;
  const names = query.split('&').map((pair) => pair.split('=')[0]);
  return `${path}?${names.map((n) => `${n}=[redacted]`).join('&')}`;
}
