import { describe, expect, it } from 'vitest';
import { isTypedRefusal } from '../../bench/lib/raw-client.js';

const overloaded = '{"error":{"type":"api_error","code":"overloaded","message":"try again"}}';

describe('bench isTypedRefusal', () => {
  it('accepts HTTP 503 + Retry-After + error.type api_error + error.code overloaded', () => {
    expect(isTypedRefusal({ status: 503, retryAfter: true, errorBody: overloaded })).toBe(true);
    expect(isTypedRefusal({ status: 503, retryAfter: true, errorBody: '{"error":{"message":"busy","code":"overloaded","type":"api_error"}}' })).toBe(true);
  });

  it('rejects anything else as an untyped failure', () => {
    expect(isTypedRefusal({ status: 503, retryAfter: false, errorBody: overloaded })).toBe(false);
    expect(isTypedRefusal({ status: 429, retryAfter: true, errorBody: overloaded })).toBe(false);
    expect(isTypedRefusal({ status: 500, retryAfter: true, errorBody: overloaded })).toBe(false);
    expect(isTypedRefusal({ status: 503, retryAfter: true, errorBody: '{"error":{"type":"api_error","code":"unavailable"}}' })).toBe(false);
    expect(isTypedRefusal({ status: 503, retryAfter: true, errorBody: '{"error":{"type":"server_error","code":"overloaded"}}' })).toBe(false);
    expect(isTypedRefusal({ status: 503, retryAfter: true, errorBody: 'Service Unavailable' })).toBe(false);
    expect(isTypedRefusal({ status: 503, retryAfter: true, errorBody: '{"error":{"type":"api_error","code":"overlo' })).toBe(false);
    expect(isTypedRefusal({ status: 503, retryAfter: true, errorBody: 'null' })).toBe(false);
  });
});
