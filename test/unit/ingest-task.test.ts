/**
 * The ingestion worker's task check (src/knowledge/ingest.worker.ts, invalidTask), written by hand so the
 * worker does not load zod (test/integration/worker-modules.test.ts watches that it stays so).
 */
import { describe, it, expect } from 'vitest';
import { invalidTask } from '../../src/knowledge/ingest.worker.js';

describe('invalidTask', () => {
  it('accepts every upload media type with text or bytes', () => {
    for (const contentType of ['text/plain', 'text/markdown', 'text/html', 'application/pdf',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document']) {
      expect(invalidTask({ title: 't', contentType, content: 'x' })).toBeUndefined();
      expect(invalidTask({ title: '', contentType, content: new Uint8Array([1]) })).toBeUndefined();
    }
    expect(invalidTask({ title: 't', contentType: 'text/plain', content: Buffer.from('x') })).toBeUndefined();
  });

  it('names the field that is wrong', () => {
    expect(invalidTask(null)).toBe('expected an object');
    expect(invalidTask('text')).toBe('expected an object');
    expect(invalidTask({ contentType: 'text/plain', content: 'x' })).toBe('title: expected a string');
    expect(invalidTask({ title: 7, contentType: 'text/plain', content: 'x' })).toBe('title: expected a string');
    expect(invalidTask({ title: 't', contentType: 'application/msword', content: 'x' }))
      .toBe('contentType: expected one of text/plain, text/markdown, text/html, application/pdf, application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(invalidTask({ title: 't', content: 'x' })).toMatch(/^contentType: /);
    expect(invalidTask({ title: 't', contentType: 'text/plain' })).toBe('content: expected a string or bytes');
    expect(invalidTask({ title: 't', contentType: 'text/plain', content: [1, 2] })).toBe('content: expected a string or bytes');
    expect(invalidTask({ title: 't', contentType: 'text/plain', content: new ArrayBuffer(2) })).toBe('content: expected a string or bytes');
  });
});
