import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AppError } from '../../errors/app-error.js';
import type { HttpResult } from '../http/types.js';

/** What a static site answers: file bytes, a 304, or (thrown) an AppError. */
export type StaticResult = Extract<HttpResult, { kind: 'bytes' | 'empty' }>;

/** Media types of the files a built site holds; anything else is served as bytes. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
/** Types worth compressing (text); images and fonts are compressed already. */
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);

/** One representation of a file: its bytes and their strong validator. */
interface Variant {
  body: Buffer;
  etag: string;
}

/** A file held in memory: identity bytes, gzip bytes when they are smaller, and its headers. */
interface StaticFile {
  contentType: string;
  cacheControl: string;
  identity: Variant;
  gzip: Variant | undefined;
}

/** How to load a site: where its built files are, where it is mounted, and how it is cached and protected. */
export interface StaticSiteOptions {
  /** The folder of built files; read once, when the site is loaded. */
  dir: string;
  /** The URL path the site answers under, without a trailing slash (`/dashboard`). */
  mount: string;
  /**
   * The file served for every path under the mount that is not a file and not under `immutablePrefix`
   * (a single-page application's routes), e.g. `index.html`.
   */
  fallback: string;
  /**
   * Files under this prefix (`assets/`) have content hashes in their names: cached for a year as
   * immutable, and an unknown name there is 404 rather than the fallback.
   */
  immutablePrefix: string;
  /** Headers on every response of the site (security policy), errors included. */
  headers: Record<string, string>;
  /** What a 404 says when the folder is missing (e.g. how to build the site). */
  missingMessage: string;
  /** `Cache-Control` of the files outside `immutablePrefix`; default `no-cache` (always revalidated). */
  cacheControl?: string;
  /** Only the mount path itself belongs to the site (a one-file site such as `/widget.js`), nothing under it. */
  exact?: boolean;
}

/** A folder of built files served from memory under one URL prefix. */
export interface StaticSite {
  readonly mount: string;
  /** False when the folder was missing at load: every request then gets 404 with `missingMessage`. */
  readonly available: boolean;
  /** Relative paths of the files held, sorted. */
  readonly files: readonly string[];
  /** Whether `path` (without the query) belongs to this site: the mount itself or anything under it. */
  owns(path: string): boolean;
  /**
   * The response to `method path`: GET and HEAD only (405 `method_not_allowed` with `Allow: GET, HEAD`
   * otherwise), gzip when `accept-encoding` allows it, 304 when `if-none-match` names the representation's
   * ETag, 404 `not_found` for an unknown hashed asset. Throws AppError; its headers carry the site's.
   */
  answer(method: string, path: string, headers: Record<string, string>): StaticResult;
}

/** A quoted strong ETag of `body` (RFC 9110 section 8.8.3): 128 bits of its SHA-256, plus a suffix per encoding. */
function etagOf(body: Buffer, suffix = ''): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}${suffix}"`;
}

/** Every file under `dir`, as paths relative to it with `/` separators. */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.push(relative(dir, full).split(sep).join('/'));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * Whether an `Accept-Encoding` value (RFC 9110 section 12.5.3) accepts gzip: `gzip` or `*` listed with a
 * weight other than 0, and `gzip` not refused by name.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  let byName: boolean | undefined;
  let byStar: boolean | undefined;
  for (const part of header.split(',')) {
    const [rawName, ...params] = part.split(';');
    const name = rawName!.trim().toLowerCase();
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([\d.]+)\s*$/i.exec(p);
      if (m) q = Number(m[1]);
    }
    if (name === 'gzip' || name === 'x-gzip') byName = q > 0;
    else if (name === '*') byStar = q > 0;
  }
  return byName ?? byStar ?? false;
}

/**
 * Whether an `If-None-Match` value names `etag` (RFC 9110 section 13.1.2: weak comparison, `*` matches
 * any current representation).
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * Loads the site in `opts.dir` into memory (every file, its gzip form when that is smaller, and an ETag
 * per form) and answers requests from there; the disk is never read again. A missing folder is not an
 * error (the server must start without a built site): the site is then unavailable.
 */
export function loadStaticSite(opts: StaticSiteOptions): StaticSite {
  const files = new Map<string, StaticFile>();
  const available = existsSync(opts.dir) && statSync(opts.dir).isDirectory() && existsSync(join(opts.dir, opts.fallback));
  if (available) {
    for (const rel of listFiles(opts.dir)) {
      const ext = extname(rel).toLowerCase();
      const body = readFileSync(join(opts.dir, rel));
      let gzip: Variant | undefined;
      if (COMPRESSIBLE.has(ext)) {
        const packed = gzipSync(body, { level: 9 });
        if (packed.length < body.length) gzip = { body: packed, etag: etagOf(body, '-gz') };
      }
      files.set(rel, {
        contentType: CONTENT_TYPES[ext] ?? 'application/octet-stream',
        cacheControl: rel.startsWith(opts.immutablePrefix) ? 'public, max-age=31536000, immutable' : (opts.cacheControl ?? 'no-cache'),
        identity: { body, etag: etagOf(body) },
        gzip,
      });
    }
  }
  const prefix = `${opts.mount}/`;
  const notFound = (message: string) => new AppError('not_found', message, { headers: opts.headers });

  return {
    mount: opts.mount,
    available,
    files: [...files.keys()],
    owns: (path) => path === opts.mount || (opts.exact !== true && path.startsWith(prefix)),
    answer(method, path, headers) {
      if (method !== 'GET' && method !== 'HEAD') {
        throw new AppError('method_not_allowed', `${method} is not allowed here; allowed: GET, HEAD.`, { headers: { ...opts.headers, Allow: 'GET, HEAD' } });
      }
      if (!available) throw notFound(opts.missingMessage);
      const rel = path === opts.mount ? '' : path.slice(prefix.length);
      const file = files.get(rel) ?? (rel.startsWith(opts.immutablePrefix) ? undefined : files.get(opts.fallback));
      if (file === undefined) throw notFound(`No file ${path}.`);
      const variant = file.gzip && acceptsGzip(headers['accept-encoding']) ? file.gzip : file.identity;
      const out: Record<string, string> = { ...opts.headers, 'Cache-Control': file.cacheControl, ETag: variant.etag };
      if (file.gzip) out.Vary = 'Accept-Encoding';
      if (noneMatch(headers['if-none-match'], variant.etag)) return { kind: 'empty', status: 304, headers: out };
      if (variant === file.gzip) out['Content-Encoding'] = 'gzip';
      return { kind: 'bytes', status: 200, contentType: file.contentType, body: variant.body, headers: out };
    },
  };
}

/**
 * The dashboard's Content-Security-Policy: everything from this origin only, no inline script or style,
 * no plugins, no framing, no `<base>`, forms post only here, and DOM sinks closed to strings (Trusted
 * Types with no policy: the app never writes HTML as text).
 */
export const DASHBOARD_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "font-src 'self'", "connect-src 'self'",
  "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
  "require-trusted-types-for 'script'", "trusted-types 'none'",
].join('; ');

/**
 * The dashboard (`/dashboard`, a single-page application built by `npm run build` into
 * `dist/web/dashboard/`), with its security headers: the strict CSP, no framing, no referrer (and `nosniff`,
 * which the responder sends on every response: src/transport/uws/responder.ts NOSNIFF).
 */
export function loadDashboard(dir: string): StaticSite {
  return loadStaticSite({
    dir, mount: '/dashboard', fallback: 'index.html', immutablePrefix: 'assets/',
    missingMessage: 'The dashboard is not built: run `npm run build`, then restart Parley.',
    headers: {
      'Content-Security-Policy': DASHBOARD_CSP,
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Resource-Policy': 'same-origin',
    },
  });
}

/**
 * The chat widget (`/widget.js`, one classic script built by `npm run build` into `dist/web/widget/`),
 * loaded by `<script src>` from pages of any origin (docs/widget.md): `Access-Control-Allow-Origin: *`
 * and `Cross-Origin-Resource-Policy: cross-origin` so no page's policy blocks it (`nosniff` comes with every response), and a stable
 * URL cached for 5 minutes, then served stale for up to a day while revalidated with its ETag, so a new
 * build reaches every page within minutes without costing a round trip per page view.
 */
export function loadWidget(dir: string): StaticSite {
  return loadStaticSite({
    dir, mount: '/widget.js', fallback: 'widget.js', immutablePrefix: 'assets/', exact: true,
    cacheControl: 'public, max-age=300, stale-while-revalidate=86400',
    missingMessage: 'The widget is not built: run `npm run build`, then restart Parley.',
    headers: {
      'Access-Control-Allow-Origin': '*',
      'Cross-Origin-Resource-Policy': 'cross-origin',
    },
  });
}
