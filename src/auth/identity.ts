/**
 * Rules for what a person signs in with: e-mail addresses and passwords (API.md "Credentials":
 * passwords 8..128 characters).
 */
import { z } from 'zod';

/** Shortest password, characters (Unicode code points). */
export const PASSWORD_MIN_CHARS = 8;
/** Longest password, characters (Unicode code points); bounds the work one login can cause. */
export const PASSWORD_MAX_CHARS = 128;
/** Longest e-mail address, characters (RFC 5321 section 4.5.3.1.3: a path is at most 256 octets with its brackets). */
export const EMAIL_MAX_CHARS = 254;

/**
 * The form an e-mail address is stored and looked up in: trimmed and lower-cased, so `Ada@Example.com`
 * and `ada@example.com ` are one account. (The local part is case-sensitive in RFC 5321, but no
 * provider people use treats it so, and two accounts differing only in case invite mistakes.)
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const EmailShape = z.email().max(EMAIL_MAX_CHARS);

/** Why `email` (already normalized) is not an address Parley accepts for a new person, or undefined. */
export function emailProblem(email: string): string | undefined {
  return EmailShape.safeParse(email).success ? undefined : `must be an e-mail address of at most ${EMAIL_MAX_CHARS} characters`;
}

/** Why `password` breaks the policy (8..128 characters, counted as Unicode code points), or undefined. */
export function passwordProblem(password: string): string | undefined {
  const n = [...password].length;
  if (n < PASSWORD_MIN_CHARS) return `must be at least ${PASSWORD_MIN_CHARS} characters`;
  if (n > PASSWORD_MAX_CHARS) return `must be at most ${PASSWORD_MAX_CHARS} characters`;
  return undefined;
}
