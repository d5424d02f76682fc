import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingNodeFlags, SERVER_NODE_FLAGS } from '../../src/node-flags.js';

describe('the server process V8 flags (src/node-flags.ts)', () => {
  it('are the single-threaded garbage collector', () => {
    expect(SERVER_NODE_FLAGS).toEqual(['--single-threaded-gc']);
  });

  it('reports the flags a process started without', () => {
    expect(missingNodeFlags([])).toEqual(['--single-threaded-gc']);
    expect(missingNodeFlags(['--inspect', '--max-semi-space-size=32'])).toEqual(['--single-threaded-gc']);
    expect(missingNodeFlags(['--cpu-prof', '--single-threaded-gc'])).toEqual([]);
    // Only the exact flag counts: a prefix or a negation is not it.
    expect(missingNodeFlags(['--single-threaded'])).toEqual(['--single-threaded-gc']);
    expect(missingNodeFlags(['--no-single-threaded-gc'])).toEqual(['--single-threaded-gc']);
  });

  it('are what `npm start` gives node, before the entry point', () => {
    const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { scripts: Record<string, string> };
    const command = pkg.scripts.start!.split('&&').map((c) => c.trim()).find((c) => c.startsWith('node '));
    expect(command).toBe('node --single-threaded-gc dist/src/main.js');
    const words = command!.split(/\s+/);
    for (const flag of SERVER_NODE_FLAGS) expect(words.indexOf(flag)).toBeGreaterThan(0);
    for (const flag of SERVER_NODE_FLAGS) expect(words.indexOf(flag)).toBeLessThan(words.indexOf('dist/src/main.js'));
  });
});
