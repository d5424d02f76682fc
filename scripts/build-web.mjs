#!/usr/bin/env node
/**
 * Builds the dashboard (src/web/dashboard/) into dist/web/dashboard/, which Parley serves at /dashboard:
 *
 *   index.html                 from src/web/dashboard/index.html, naming the files below
 *   assets/app-<hash>.js       the app and Preact, bundled and minified by esbuild (one ES module)
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
  bundle: true,
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
const js = outputs.find((p) => p.endsWith('.js'));
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

const rows = [join(out, 'index.html'), js, css, join(assets, iconName)].map((file) => {
  const bytes = readFileSync(file);
  return { file: relative(out, file), raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
});
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const total = rows.reduce((t, r) => ({ raw: t.raw + r.raw, gzip: t.gzip + r.gzip }), { raw: 0, gzip: 0 });
if (process.env.npm_config_loglevel !== 'silent') process.stdout.write(
  `dashboard built in ${relative(root, out)}/\n`
  + rows.map((r) => `  ${r.file.padEnd(28)} ${kib(r.raw).padStart(10)} raw ${kib(r.gzip).padStart(10)} gzip\n`).join('')
  + `  ${'total'.padEnd(28)} ${kib(total.raw).padStart(10)} raw ${kib(total.gzip).padStart(10)} gzip\n`,
);

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
