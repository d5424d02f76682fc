import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.js';
import { redactUrl } from '../../src/log/logger.js';

describe('redactUrl', () => {
  const key = generateApiKey();

  it('leaves an ordinary path alone and redacts every query value, keeping the names', () => {
    expect(redactUrl('/v1/agents/agt_1', '')).toBe('/v1/agents/agt_1');
    expect(redactUrl('/v1/knowledge-bases/kb_1/search', 'q=hello&k=3')).toBe('/v1/knowledge-bases/kb_1/search?q=[redacted]&k=[redacted]');
  });

  it('redacts a key-shaped string in a path segment, alone or inside a longer segment', () => {
    expect(redactUrl(`/v1/agents/${key}/chat`, '')).toBe('/v1/agents/sk_[redacted]/chat');
    expect(redactUrl(`/v1/x/kb_${key}z`, '')).toBe('/v1/x/kb_sk_[redacted]z');
    // The checksum is not checked: near-keys are redacted too.
    expect(redactUrl(`/v1/x/sk_${'A'.repeat(36)}`, '')).toBe('/v1/x/sk_[redacted]');
  });

  it('redacts a key used as a query parameter name', () => {
    expect(redactUrl('/v1/agents', `${key}&limit=5`)).toBe('/v1/agents?sk_[redacted]=[redacted]&limit=[redacted]');
  });

  it('redacts a whole segment or name whose percent-encoding hides a key', () => {
    expect(redactUrl(`/v1/agents/sk%5F${key.slice(3)}`, '')).toBe('/v1/agents/[redacted]');
    expect(redactUrl('/v1/agents', `sk%5f${key.slice(3)}=1`)).toBe('/v1/agents?[redacted]=[redacted]');
    expect(redactUrl('/v1/agents/%E0%A4%A', '')).toBe('/v1/agents/%E0%A4%A');
  });

  it('keeps short sk_ words', () => {
    expect(redactUrl('/v1/sk_notakey', 'sk_=1')).toBe('/v1/sk_notakey?sk_=[redacted]');
  });
});
