import { afterAll, describe, expect, it } from 'vitest';
import { createWorkerTokenCounter, inProcessTokenCounter } from '../../src/models/token-counter.js';
import type { ModelMessage } from '../../src/models/port.js';

const counter = createWorkerTokenCounter();
afterAll(() => counter.close());

describe('worker token counter (needs `npm run build`)', () => {
  const messages: ModelMessage[] = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'How do I stream a reply?' }];

  it('counts exactly what the in-process counter counts, off the main thread', async () => {
    const texts = ['Streaming uses Server-Sent Events.', 'x'.repeat(1000)];
    expect(await counter.count(messages, texts)).toBe(await inProcessTokenCounter.count(messages, texts));
    expect(await counter.count([], [''])).toBe(0);
  });

  it('truncates to whole words within the token cap', async () => {
    const text = 'one two three four five six seven eight nine ten';
    const cut = await counter.truncate(text, 3);
    expect(cut).toEqual(await inProcessTokenCounter.truncate(text, 3));
    expect(cut.truncated).toBe(true);
    expect(text.startsWith(cut.text)).toBe(true);
    expect(await counter.truncate('short', 10)).toEqual({ text: 'short', truncated: false });
  });

  it('rejects a malformed task instead of crashing the worker, and keeps serving', async () => {
    await expect(counter.count(null as unknown as ModelMessage[], [])).rejects.toThrow();
    expect(await counter.count([], ['still here'])).toBeGreaterThan(0);
  });
});
