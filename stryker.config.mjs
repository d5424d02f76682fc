/**
 * Mutation testing (Stryker with its vitest runner): how many deliberate bugs the tests catch.
 * Run on the modules a change touched, e.g.
 *   npm run mutation -- --mutate src/runtime/admission.ts
 * against the unit tests that cover them (vitest.unit.config.ts: test/unit only).
 * The HTML report goes to reports/mutation/ (gitignored).
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.unit.config.ts', related: true },
  checkers: [],
  reporters: ['clear-text', 'progress', 'html'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  concurrency: 2,
  timeoutMS: 30_000,
  coverageAnalysis: 'perTest',
  ignorePatterns: ['dist', 'data', 'reports', 'test-results', '.stryker-tmp', 'bench/results'],
  thresholds: { high: 80, low: 60, break: null },
};
