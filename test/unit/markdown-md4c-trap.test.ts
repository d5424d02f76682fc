import { describe, it, expect, vi } from 'vitest';

// md4c's WebAssembly trapping (its memory could not grow) is simulated: the renderer throws on demand.
const md4wState = vi.hoisted(() => ({ trap: false, inits: 0 }));
vi.mock('md4w', async (importOriginal) => {
  const real = await importOriginal<Record<string, unknown>>();
  const render = real.renderToString as (...args: unknown[]) => string;
  const init = real.initSync as (m: unknown) => void;
  return {
    ...real,
    renderToString: (...args: unknown[]) => {
      if (md4wState.trap) throw new Error('RuntimeError: unreachable');
      return render(...args);
    },
    initSync: (m: unknown) => {
      md4wState.inits++;
      init(m);
    },
  };
});

const { parseDocument, parseMarkdownMarked, parseMarkdownMd4c } = await import('../../src/knowledge/parse-document.js');

describe('parseMarkdownMd4c when the WebAssembly traps', () => {
  it('starts a fresh instance, returns undefined, and parseDocument falls back to marked', () => {
    const markdown = '# Title\n\nSome *text* with `code`.\n\n- a\n- b';
    expect(parseMarkdownMd4c(markdown)).toEqual(parseMarkdownMarked(markdown)); // loads md4c: one instance
    const before = md4wState.inits;
    md4wState.trap = true;
    try {
      expect(parseMarkdownMd4c(markdown)).toBeUndefined();
      expect(md4wState.inits).toBe(before + 1);
      expect(parseDocument(markdown, 'text/markdown')).toEqual([
        { heading: 'Title', paragraphs: ['Some text with code.', 'a\nb'] },
      ]);
    } finally {
      md4wState.trap = false;
    }
    expect(parseMarkdownMd4c(markdown)).toEqual(parseMarkdownMarked(markdown)); // the fresh instance parses again
  });
});
