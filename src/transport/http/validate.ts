import type { ZodType } from 'zod';
import { AppError, type FieldError } from '../../errors/app-error.js';

/**
 * Validates `value` with `schema`; throws AppError `validation_failed` (400) with one `{path, message}`
 * per problem. Unknown fields are reported at their own path (`model.temprature`).
 */
export function validate<T>(schema: ZodType<T>, value: unknown, where: 'body' | 'query'): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const errors: FieldError[] = [];
  for (const issue of r.error.issues) {
    const base = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) errors.push({ path: [...base, key].join('.'), message: 'unknown field' });
    } else {
      errors.push({ path: base.join('.') || where, message: issue.message });
    }
  }
  throw new AppError('validation_failed', `The request ${where} is invalid: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}.`, { errors });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses a JSON body; throws AppError `invalid_json` (400) when it is not UTF-8 (RFC 8259 section 8.1:
 * JSON exchanged between systems is UTF-8; invalid bytes are refused, never replaced) or not JSON.
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
