import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { deliveryHeaders, generateSigningSecret, serviceSignature } from '../../src/webhooks/signing.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('webhook signing', () => {
  it('X-Service-Signature is the hex HMAC-SHA256 of the raw body keyed with the secret as shown', () => {
    // Value computed independently: echo -n '{"id":"evt_1"}' | openssl dgst -sha256 -hmac 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
    expect(serviceSignature(SECRET, '{"id":"evt_1"}')).toBe('fdc08bb179c3948b0063f9d95a9aa09776ea511bea853e83274c2b4e23e24a5f');
  });

  it('a receiver verifies the raw body in constant time after a length check (SPEC.md 6.2 rule 2)', () => {
    const body = '{"id":"evt_2","type":"message.created"}';
    const h = deliveryHeaders({ secrets: { current: SECRET }, eventId: 'evt_2', eventType: 'message.created', deliveryId: 'dlv_1', timestampSeconds: 1_800_000_000, body, userAgent: 'Parley/test' });
    const expected = Buffer.from(createHmac('sha256', SECRET).update(body).digest('hex'));
    const got = Buffer.from(h['x-service-signature']!);
    expect(got.length).toBe(expected.length);
    expect(timingSafeEqual(got, expected)).toBe(true);
    const tampered = Buffer.from(createHmac('sha256', SECRET).update(`${body} `).digest('hex'));
    expect(timingSafeEqual(got, tampered)).toBe(false);
  });

  it('the standardwebhooks library verifies the Standard Webhooks headers with the secret as shown', () => {
    const body = '{"id":"evt_3","type":"conversation.created","data":{}}';
    const now = Math.floor(Date.now() / 1000);
    const h = deliveryHeaders({ secrets: { current: SECRET }, eventId: 'evt_3', eventType: 'conversation.created', deliveryId: 'dlv_2', timestampSeconds: now, body, userAgent: 'Parley/test' });
    expect(new Webhook(SECRET).verify(body, h)).toEqual({ id: 'evt_3', type: 'conversation.created', data: {} });
    expect(() => new Webhook(SECRET).verify(`${body} `, h)).toThrow();
  });

  it('during a rotation overlap both secrets sign, and either verifies', () => {
    const previous = generateSigningSecret();
    const current = generateSigningSecret();
    const body = '{"id":"evt_4"}';
    const now = Math.floor(Date.now() / 1000);
    const h = deliveryHeaders({ secrets: { current, previous }, eventId: 'evt_4', eventType: 'tool.run', deliveryId: 'dlv_3', timestampSeconds: now, body, userAgent: 'Parley/test' });
    expect(h['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(previous).verify(body, h)).toEqual({ id: 'evt_4' });
    expect(new Webhook(current).verify(body, h)).toEqual({ id: 'evt_4' });
    expect(h['x-service-signature']).toBe(serviceSignature(current, body));
  });

  it('carries the event id, type, delivery id and timestamp headers', () => {
    const h = deliveryHeaders({ secrets: { current: SECRET }, eventId: 'evt_5', eventType: 'usage.threshold', deliveryId: 'dlv_9', timestampSeconds: 1_800_000_123, body: '{}', userAgent: 'Parley/0.1.0' });
    expect(h).toMatchObject({
      'content-type': 'application/json', 'user-agent': 'Parley/0.1.0', 'x-service-event-id': 'evt_5', 'x-service-event-type': 'usage.threshold',
      'x-service-delivery-id': 'dlv_9', 'x-service-timestamp': '1800000123', 'webhook-id': 'evt_5', 'webhook-timestamp': '1800000123',
    });
  });

  it('generates Standard Webhooks secrets: whsec_ and 32 random bytes', () => {
    const s = generateSigningSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(generateSigningSecret()).not.toBe(s);
  });
});
