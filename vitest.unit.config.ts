import { defineConfig } from 'vitest/config';

/**
 * The fast tests (pure modules, plus in-process tests without a Parley server or child processes): what
 * mutation testing runs (stryker.config.mjs), since a mutant run re-runs these tests hundreds of times.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/outbound-guard.test.ts'],
    testTimeout: 30_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
