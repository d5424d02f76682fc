#!/usr/bin/env node
/**
 * Builds the dashboard (src/web/dashboard/) into dist/web/dashboard/, which Parley serves at /dashboard:
 *
 *   index.html                 from src/web/dashboard/index.html, naming the files below
 *   assets/app-<hash>.js       the entry (an ES module): the frame and navigation
 *   assets/chunk-<hash>.js     what the entry and every page share (src/web/dashboard/shared.ts: Preact, the
 *                              session, sign-in, the API client, and the inbox where everyone lands), loaded with it
 *   assets/<section>-<hash>.js the other pages, by section (build, usage, settings), each loaded by a
 *                              dynamic import() when one of its pages is first opened (esbuild code splitting)
 *   assets/app-<hash>.css      the stylesheet, minified
 *   assets/icon-<hash>.svg     the favicon
 *
 * and the chat widget (src/web/widget/) into dist/web/widget/widget.js, which Parley serves at /widget.js:
 * one classic script (an IIFE, so a plain `<script async>` tag on any page loads it) holding Preact, the
 * widget and its stylesheet (minified, inlined as a string for its shadow root).
 *
 * Asset names carry a hash of their content, so the server can let browsers keep them for a year and a
 * new build is picked up at the next load of index.html (which is always revalidated). Nothing is loaded
 * from elsewhere at run time. Prints the size of each file, raw and gzipped, unless npm runs it silently
 * (`npm run build --silent`, as `npm start`, `npm test` and `npm run parley` do). Run by `npm run build`.
 *
 * Budgets (issue 40): the dashboard's files together, gzipped one by one (as the server sends them), stay
 * within 60 KiB; the widget within 25 KiB. The build fails past either.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src/web/dashboard');
const out = join(root, 'dist/web/dashboard');
const assets = join(out, 'assets');

/** The first 10 hex digits of the SHA-256 of `bytes`, for a file name. */
const hashOf = (bytes) => createHash('sha256').update(bytes).digest('hex').slice(0, 10);

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: [
    { in: join(src, 'main.tsx'), out: 'app' },
    { in: join(src, 'styles.css'), out: 'app' },
  ],
  outdir: assets,
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  charset: 'utf8',
  minify: true,
  format: 'esm',
  platform: 'browser',
  // Browsers of the last few years (module scripts, <dialog>, :focus-visible); nothing is polyfilled.
  target: ['es2022', 'chrome105', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: join(root, 'tsconfig.web.json'),
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'eof',
  sourcemap: false,
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => join(root, p));
const js = outputs.find((p) => /\/app-[^/]+\.js$/.test(p));
const css = outputs.find((p) => p.endsWith('.css'));
if (!js || !css) throw new Error(`esbuild produced no app bundle: ${outputs.join(', ')}`);

const icon = readFileSync(join(src, 'icon.svg'));
const iconName = `icon-${hashOf(icon)}.svg`;
writeFileSync(join(assets, iconName), icon);

const url = (file) => `/dashboard/assets/${basename(file)}`;
const html = readFileSync(join(src, 'index.html'), 'utf8')
  .replace('{{css}}', url(css))
  .replace('{{js}}', url(js))
  .replace('{{icon}}', `/dashboard/assets/${iconName}`);
if (html.includes('{{')) throw new Error('src/web/dashboard/index.html has a placeholder the build does not fill');
writeFileSync(join(out, 'index.html'), html);

/** What a JS file holds: the entry, the code every page shares (loaded with it), or a section of pages. */
const roleOf = (file) => {
  const meta = result.metafile.outputs[relative(root, file)];
  if (file === js) return 'entry: the frame and navigation (app.tsx)';
  if (meta?.entryPoint) return `on demand: ${relative(src, join(root, meta.entryPoint))}`;
  return 'with the entry: Preact, session, sign-in, API client, the inbox (shared.ts)';
};
const files = [join(out, 'index.html'), js, css, join(assets, iconName), ...outputs.filter((p) => p.endsWith('.js') && p !== js).sort()];
const rows = files.map((file) => {
  const bytes = readFileSync(file);
  return { file: relative(out, file), raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length, role: file.endsWith('.js') ? roleOf(file) : '' };
});
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const total = rows.reduce((t, r) => ({ raw: t.raw + r.raw, gzip: t.gzip + r.gzip }), { raw: 0, gzip: 0 });
/** The dashboard's budget, gzipped bytes of all its files together (README "Dashboard"). */
const DASHBOARD_BUDGET = 60 * 1024;
if (process.env.npm_config_loglevel !== 'silent') process.stdout.write(
  `dashboard built in ${relative(root, out)}/ (budget ${kib(DASHBOARD_BUDGET)} gzipped in all)\n`
  + rows.map((r) => `  ${r.file.padEnd(36)} ${kib(r.raw).padStart(10)} raw ${kib(r.gzip).padStart(10)} gzip  ${r.role}\n`).join('')
  + `  ${'total'.padEnd(36)} ${kib(total.raw).padStart(10)} raw ${kib(total.gzip).padStart(10)} gzip\n`,
);
if (total.gzip > DASHBOARD_BUDGET) throw new Error(`the dashboard is ${kib(total.gzip)} gzipped in all, over its ${kib(DASHBOARD_BUDGET)} budget`);
// For the README and tests: the sizes of this build.
writeFileSync(join(root, 'dist/web/dashboard-sizes.json'), `${JSON.stringify({ budget_gzip: DASHBOARD_BUDGET, total, files: rows }, null, 2)}\n`);

// The widget: one self-contained classic script with a stable name (pages embed its URL).
const widgetSrc = join(root, 'src/web/widget');
const widgetOut = join(root, 'dist/web/widget');
rmSync(widgetOut, { recursive: true, force: true });
mkdirSync(widgetOut, { recursive: true });
const widgetCss = await esbuild.transform(readFileSync(join(widgetSrc, 'styles.css'), 'utf8'), {
  loader: 'css', minify: true, target: ['chrome111', 'firefox113', 'safari16.2'],
});
await esbuild.build({
  absWorkingDir: root,
  entryPoints: [join(widgetSrc, 'main.tsx')],
  outfile: join(widgetOut, 'widget.js'),
  bundle: true,
  minify: true,
  format: 'iife',
  platform: 'browser',
  target: ['es2022', 'chrome111', 'firefox113', 'safari16.2'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: join(root, 'tsconfig.web.json'),
  define: { 'process.env.NODE_ENV': '"production"', __WIDGET_CSS__: JSON.stringify(widgetCss.code.trim()) },
  legalComments: 'eof',
  sourcemap: false,
  logLevel: 'warning',
});
const widgetBytes = readFileSync(join(widgetOut, 'widget.js'));
const widgetGzip = gzipSync(widgetBytes, { level: 9 }).length;
if (process.env.npm_config_loglevel !== 'silent') process.stdout.write(
  `widget built in ${relative(root, widgetOut)}/ (served at /widget.js; budget 25 KiB gzipped)\n`
  + `  ${'widget.js'.padEnd(28)} ${kib(widgetBytes.length).padStart(10)} raw ${kib(widgetGzip).padStart(10)} gzip\n`,
);
if (widgetGzip > 25 * 1024) throw new Error(`the widget is ${kib(widgetGzip)} gzipped, over its 25 KiB budget`);
