/**
 * The layers of DESIGN.md, enforced on every `npm test` (`npm run lint:layers`). An arrow may only
 * point down:
 *
 *   transport -> runtime -> (auth, knowledge, models, moderation, tools, webhooks) -> store -> shared
 *   shared = config, errors, events, ids, log, metrics, net, text, vocabulary, workers
 *   actors/ (pure XState machines): xstate, actors/ and types from src/vocabulary only
 *
 * The composition root (src/main.ts, src/parley.ts, src/process-policy.ts, src/process-group.ts, src/bootstrap/, src/cli/) may import anything.
 * Transport may name the records of lower layers in types (views), never call into them.
 *
 * src/web/ (the dashboard, bundled for the browser by scripts/build-web.mjs) is an island beside the
 * layers: it imports nothing from the rest of src/ and no Node.js module, only the browser libraries named
 * below; and nothing in
 * src/ imports it. It talks to the server over HTTP only.
 */
const SHARED = '^src/(config|errors|events|ids|log|metrics|net|text|vocabulary|workers)/';
const STORE = '^src/store/';
const DOMAIN = '^src/(auth|knowledge|models|moderation|tools|webhooks)/';
const RUNTIME = '^src/runtime/';
const TRANSPORT = '^src/transport/';
const ROOT = ['^src/(main|parley|process-policy|process-group)[.]ts$', '^src/(bootstrap|cli)/'];
const WEB = '^src/web/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'shared-imports-shared-only',
      comment: 'config, errors, events, ids, log, metrics, text, vocabulary and workers are the bottom layer: they import nothing above them.',
      severity: 'error',
      from: { path: SHARED },
      to: { path: ['^src/', '^actors/'], pathNot: SHARED },
    },
    {
      name: 'store-below-domain',
      comment: 'The store knows only the shared layer; it must not import the modules that use it.',
      severity: 'error',
      from: { path: STORE },
      to: { path: [DOMAIN, RUNTIME, TRANSPORT, '^actors/', ...ROOT] },
    },
    {
      name: 'domain-below-runtime',
      comment: 'auth, knowledge, models, moderation and tools sit under the runtime.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: [RUNTIME, TRANSPORT, '^actors/', ...ROOT] },
    },
    {
      name: 'runtime-below-transport',
      comment: 'The runtime never imports the transport or the composition root.',
      severity: 'error',
      from: { path: RUNTIME },
      to: { path: [TRANSPORT, ...ROOT] },
    },
    {
      name: 'transport-through-runtime',
      comment: 'Route and socket handlers call runtime services; they may name lower-layer records in types only.',
      severity: 'error',
      from: { path: TRANSPORT },
      to: { path: [STORE, DOMAIN, '^actors/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'transport-not-root',
      severity: 'error',
      from: { path: TRANSPORT },
      to: { path: ROOT },
    },
    {
      name: 'actors-are-pure',
      comment: 'actors/ holds pure XState logic: it imports xstate, other machines and shared vocabulary types only.',
      severity: 'error',
      from: { path: '^actors/' },
      to: { pathNot: ['^actors/', '^src/vocabulary/', 'node_modules/xstate/'] },
    },
    {
      name: 'actors-vocabulary-types-only',
      severity: 'error',
      from: { path: '^actors/' },
      to: { path: '^src/vocabulary/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'machines-run-in-the-runtime',
      comment: 'Only the runtime (and the composition root) runs the machines.',
      severity: 'error',
      from: { path: '^src/', pathNot: [RUNTIME, ...ROOT] },
      to: { path: '^actors/' },
    },
    {
      name: 'web-is-an-island',
      comment: 'The dashboard runs in the browser and knows the server only through its HTTP API.',
      severity: 'error',
      from: { path: WEB },
      to: { path: ['^src/', '^actors/'], pathNot: WEB },
    },
    {
      name: 'web-uses-preact-only',
      comment: 'Browser code: no Node.js modules, and of the npm packages only Preact, eventsource-parser (chat streams), openapi-fetch (the typed API client, with its type helpers) and chartist (the usage chart), bundled at build time.',
      severity: 'error',
      from: { path: WEB },
      to: { dependencyTypes: ['core', 'npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], pathNot: ['node_modules/preact/', 'node_modules/eventsource-parser/', 'node_modules/openapi-fetch/', 'node_modules/openapi-typescript-helpers/', 'node_modules/chartist/'] },
    },
    {
      name: 'nothing-imports-web',
      comment: 'The server never imports the dashboard\'s code; it serves its built files.',
      severity: 'error',
      from: { path: ['^src/', '^actors/'], pathNot: WEB },
      to: { path: WEB },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'not-to-test-or-bench',
      severity: 'error',
      from: { path: ['^src/', '^actors/'] },
      to: { path: ['^test/', '^bench/'] },
    },
    {
      name: 'not-to-dev-dep',
      comment: 'Shipped code must not depend on devDependencies (the dashboard bundles Preact at build time, so it may).',
      severity: 'error',
      from: { path: ['^src/', '^actors/'], pathNot: WEB },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
