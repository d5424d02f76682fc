/**
 * `metadata`: the caller's own key-value pairs on a conversation (API.md "Conventions"), with Stripe's
 * rules (https://docs.stripe.com/metadata): at most 50 keys, keys of 1 to 40 characters, values strings
 * of at most 500 characters. Anything else is 400 `validation_failed`. The rules bound what a
 * conversation can carry (50 x 540 characters), so lists of conversations stay small, whoever calls the
 * public chat.
 */
import { z } from 'zod';

/** The limits of `metadata` (Stripe's). */
export const METADATA_LIMITS = { maxKeys: 50, maxKeyLength: 40, maxValueLength: 500 } as const;

/**
 * Counts the own enumerable keys of `value`, stopping at `stopAt`: a body with 90,000 keys costs 51
 * steps here, before zod looks at any of them.
 */
function keysUpTo(value: object, stopAt: number): number {
  let n = 0;
  for (const key in value) {
    if (Object.hasOwn(value, key) && ++n >= stopAt) break;
  }
  return n;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The schema of `metadata`. The key count is checked first and alone (a plain object of more than 50
 * keys fails with one issue, whatever its entries), then each key and value, so a hostile body costs
 * at most 50 entry checks and its error lists at most 50 problems. JSON Schema: an object with
 * `maxProperties` 50, `propertyNames` of 1-40 characters and string values of at most 500 characters.
 */
export const MetadataSchema = z.custom<Record<string, unknown>>(
  (v) => !isPlainObject(v) || keysUpTo(v, METADATA_LIMITS.maxKeys + 1) <= METADATA_LIMITS.maxKeys,
  { message: `must have at most ${METADATA_LIMITS.maxKeys} keys` },
).pipe(z.record(
  z.string().min(1, 'keys must have 1 to 40 characters').max(METADATA_LIMITS.maxKeyLength, 'keys must have 1 to 40 characters'),
  z.string({ error: 'values must be strings' }).max(METADATA_LIMITS.maxValueLength, `values must have at most ${METADATA_LIMITS.maxValueLength} characters`),
)).meta({
  id: 'Metadata',
  type: 'object',
  maxProperties: METADATA_LIMITS.maxKeys,
  propertyNames: { type: 'string', minLength: 1, maxLength: METADATA_LIMITS.maxKeyLength },
  additionalProperties: { type: 'string', maxLength: METADATA_LIMITS.maxValueLength },
  description: 'Your own key-value pairs (Stripe\'s rules): at most 50 keys of 1-40 characters, values strings of at most 500 characters',
});
export type Metadata = Record<string, string>;
