/**
 * Signing of webhook deliveries (SPEC.md 6.2 rules 1-2, API.md "Webhooks"). Two signatures on every
 * delivery, over the exact bytes sent:
 * - `X-Service-Signature`: hex HMAC-SHA256 of the raw body, keyed with the secret string exactly as shown
 *   (`whsec_...`, its UTF-8 bytes).
 * - `webhook-signature` (Standard Webhooks, https://www.standardwebhooks.com/): `v1,<base64 HMAC-SHA256
 *   of "<id>.<timestamp>.<body>">`, keyed with the base64-decoded part of the secret after `whsec_`, one
 *   entry per valid secret (during a rotation overlap both sign), separated by spaces.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** Prefix of a signing secret. */
export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + base64 of 32 random bytes (the Standard Webhooks secret format). */
export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** Hex HMAC-SHA256 of `body` keyed with `secret` as a UTF-8 string (the X-Service-Signature value). */
export function serviceSignature(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * One Standard Webhooks signature entry `v1,<base64>` for message `id` at `timestampSeconds` (Unix s).
 * The key is the base64 payload of the secret after `whsec_`.
 */
export function standardSignatureEntry(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** What a delivery is signed with: the current secret and, during a rotation overlap, the previous one. */
export interface SigningSecrets {
  current: string;
  previous?: string | undefined;
}

/** The headers of one delivery attempt (API.md "Webhooks"). `timestampSeconds` is the attempt's Unix time, s. */
export function deliveryHeaders(opts: {
  secrets: SigningSecrets; eventId: string; eventType: string; deliveryId: string; timestampSeconds: number; body: string; userAgent: string;
}): Record<string, string> {
  const { secrets, eventId, body, timestampSeconds } = opts;
  const entries = [standardSignatureEntry(secrets.current, eventId, timestampSeconds, body)];
  if (secrets.previous !== undefined) entries.push(standardSignatureEntry(secrets.previous, eventId, timestampSeconds, body));
  return {
    'content-type': 'application/json',
    'user-agent': opts.userAgent,
    'x-service-signature': serviceSignature(secrets.current, body),
    'x-service-event-id': eventId,
    'x-service-event-type': opts.eventType,
    'x-service-delivery-id': opts.deliveryId,
    'x-service-timestamp': String(timestampSeconds),
    'webhook-id': eventId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': entries.join(' '),
  };
}
