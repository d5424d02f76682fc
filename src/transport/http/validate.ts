import type { ZodType } from 'zod';
import { AppError, type FieldError } from '../../errors/app-error.js';

/** Most `{path, message}` entries one `validation_failed` lists; more problems are summed up in the last. */
export const MAX_FIELD_ERRORS = 20;
/** Longest path segment an error repeats, characters; a longer one (a hostile key) is cut with `…`. */
export const MAX_PATH_SEGMENT = 64;

const segment = (key: PropertyKey) => {
  const text = String(key);
  return text.length > MAX_PATH_SEGMENT ? `${text.slice(0, MAX_PATH_SEGMENT)}…` : text;
};

/**
 * Validates `value` with `schema`; throws AppError `validation_failed` (400) with one `{path, message}`
 * per problem, at most {@link MAX_FIELD_ERRORS} (then a last entry counts the rest), each path segment
 * cut at {@link MAX_PATH_SEGMENT} characters: the error a body causes stays small, whatever the body.
 * Unknown fields are reported at their own path (`model.temprature`).
 */
export function validate<T>(schema: ZodType<T>, value: unknown, where: 'body' | 'query'): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const errors: FieldError[] = [];
  let more = 0;
  const add = (e: FieldError) => { if (errors.length < MAX_FIELD_ERRORS) errors.push(e); else more++; };
  for (const issue of r.error.issues) {
    const base = issue.path.map(segment);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add({ path: [...base, segment(key)].join('.'), message: 'unknown field' });
    } else {
      // A record key that breaks its rule: the key's own message (zod nests it), not "Invalid key in record".
      const message = issue.code === 'invalid_key' ? issue.issues[0]?.message ?? issue.message : issue.message;
      add({ path: base.join('.') || where, message });
    }
  }
  if (more > 0) errors.push({ path: where, message: `and ${more} more problems` });
  throw new AppError('validation_failed', `The request ${where} is invalid: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}.`, { errors });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Deepest nesting of arrays and objects a JSON request body may have, levels (API.md "Conventions"). */
export const MAX_JSON_DEPTH = 64;

/**
 * Throws AppError `unsupported_content_type` (415) unless `header` is `application/json` (RFC 8259
 * section 11; API.md "Conventions": a JSON body needs it). The media type is matched
 * case-insensitively (RFC 9110 section 8.3.1) and parameters are allowed, but a `charset` other than
 * UTF-8 is refused: the body is always read as UTF-8 (RFC 8259 section 8.1).
 */
export function requireJsonContentType(header: string | undefined): void {
  const [type = '', ...params] = (header ?? '').split(';');
  const media = type.trim().toLowerCase();
  if (media !== 'application/json') {
    throw new AppError('unsupported_content_type', header === undefined
      ? 'A JSON body needs "Content-Type: application/json".'
      : `Content-Type ${JSON.stringify(media)} is not supported here; send the body as application/json.`);
  }
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const charset = param.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') {
      throw new AppError('unsupported_content_type', `JSON bodies are read as UTF-8; charset ${JSON.stringify(charset)} is not supported.`);
    }
  }
}

/** The value of 4 hex digits at `text[at..at+4)`, or -1. */
function hex4(text: string, at: number): number {
  const digits = text.slice(at, at + 4);
  return /^[0-9a-fA-F]{4}$/.test(digits) ? Number.parseInt(digits, 16) : -1;
}

function bodyRefused(message: string, detail: string): AppError {
  return new AppError('validation_failed', message, { errors: [{ path: 'body', message: detail }] });
}

/**
 * Checks the raw text of a JSON body before it is parsed, in one pass with no recursion (so its cost
 * is linear in the size of the body and no input can exhaust the stack):
 * - arrays/objects nested deeper than {@link MAX_JSON_DEPTH} levels (brackets inside strings do not count);
 * - `\u` escapes that leave a lone UTF-16 surrogate in a string or a key (a high surrogate not
 *   followed by a low one, or a low one on its own): JSON.parse would accept them (RFC 8259 section
 *   8.2 leaves them undefined) and they would be stored as text that is not valid Unicode. They are
 *   refused, never replaced (API.md "Conventions").
 * Malformed JSON is left to JSON.parse. Throws AppError `validation_failed` (400), path `body`.
 */
export function checkJsonText(text: string): void {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) { // "
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x22) break;
        if (d !== 0x5c) continue; // not a backslash
        if (text.charCodeAt(i + 1) !== 0x75) { i++; continue; } // \" \\ \n ...: skip the escaped char
        const unit = hex4(text, i + 2);
        if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = text.charCodeAt(i + 6) === 0x5c && text.charCodeAt(i + 7) === 0x75 ? hex4(text, i + 8) : -1;
          if (low < 0xdc00 || low > 0xdfff) {
            throw bodyRefused('The request body holds a lone UTF-16 surrogate.', `lone surrogate \\u${text.slice(i + 2, i + 6)} at character ${i}`);
          }
          i += 11;
        } else if (unit >= 0xdc00 && unit <= 0xdfff) {
          throw bodyRefused('The request body holds a lone UTF-16 surrogate.', `lone surrogate \\u${text.slice(i + 2, i + 6)} at character ${i}`);
        } else {
          i += 5;
        }
      }
    } else if (c === 0x7b || c === 0x5b) { // { [
      if (++depth > MAX_JSON_DEPTH) {
        throw bodyRefused(`The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, `nesting deeper than ${MAX_JSON_DEPTH} levels`);
      }
    } else if (c === 0x7d || c === 0x5d) { // } ]
      depth--;
    }
  }
}

/**
 * Parses a JSON body; throws AppError `invalid_json` (400) when it is not UTF-8 (RFC 8259 section 8.1:
 * JSON exchanged between systems is UTF-8; invalid bytes are refused, never replaced) or not JSON,
 * and `validation_failed` (400) when it nests too deep or holds lone surrogates ({@link checkJsonText}).
 * Empty body -> `{}`.
 */
export function parseJson(body: Buffer | null): unknown {
  if (body === null || body.length === 0) return {};
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new AppError('invalid_json', 'The request body is not valid UTF-8.');
  }
  checkJsonText(text);
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid_json', 'The request body is not valid JSON.');
  }
}

/** URLSearchParams as a plain object (last value wins) for query schemas. */
export function queryObject(query: URLSearchParams): Record<string, string> {
  return Object.fromEntries(query.entries());
}
