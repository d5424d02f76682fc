/**
 * The widget preview page, `GET /preview/{public_key}`: a sample web page that embeds the chat widget of
 * the agent published under that key with the embed tag of docs/operator-console.md,
 *
 *   <script src="/widget.js" data-public-key="pk_..." async></script>
 *
 * so an operator can try the widget before pasting the tag into a real website. The dashboard shows it in
 * a frame (pages/preview.tsx): the dashboard's own policy forbids adding scripts at run time (Trusted
 * Types), so the widget runs on this page instead, under a policy of its own: scripts only from this
 * origin (the widget is served here), inline styles allowed (the widget styles its shadow root), sockets
 * and requests only to this origin, framing only by this origin.
 *
 * The page answers for any well-formed key without looking it up (the widget itself reports a key that
 * is not published); a malformed one is 404. Nothing of the request is echoed but the checked key.
 */
import { AppError } from '../../errors/app-error.js';
import type { StaticResult, StaticSite } from './static-site.js';

/** Where the preview pages live. */
export const PREVIEW_MOUNT = '/preview';

/** A public key as Parley issues them (src/runtime/services/agents.ts): `pk_` and 32 base64url characters; some slack in length. */
const KEY = /^pk_[A-Za-z0-9_-]{16,64}$/;

/** The preview page's Content-Security-Policy (see the file's comment). */
export const PREVIEW_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self'",
  "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'self'",
].join('; ');

const HEADERS: Record<string, string> = {
  'Content-Security-Policy': PREVIEW_CSP,
  'X-Frame-Options': 'SAMEORIGIN',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/** The HTML of the preview page for `publicKey` (already checked against KEY: nothing to escape). */
export function previewHtml(publicKey: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Widget preview · Parley</title>
<style>
  body { margin: 0; font: 16px/1.6 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1e293b; background: #f8fafc; }
  header { background: #fff; border-bottom: 1px solid #e2e8f0; }
  header div, main { max-width: 760px; margin: 0 auto; padding: 16px 24px; }
  header strong { font-size: 18px; }
  header span { color: #64748b; margin-left: 12px; font-size: 14px; }
  main h1 { font-size: 28px; line-height: 1.25; margin: 24px 0 8px; }
  main p { color: #475569; max-width: 60ch; }
  .block { height: 14px; border-radius: 7px; background: #e2e8f0; margin: 12px 0; }
  .block.short { width: 55%; } .block.mid { width: 80%; }
  code { font: 13px ui-monospace, Menlo, Consolas, monospace; background: #e2e8f0; border-radius: 4px; padding: 1px 5px; word-break: break-all; }
</style>
</head>
<body>
<header><div><strong>Your website</strong><span>a sample page with the chat widget</span></div></header>
<main>
  <h1>Welcome to your website</h1>
  <p>This page shows the chat widget exactly as your visitors will see it. Open it with the chat button in the corner.</p>
  <div class="block mid"></div><div class="block"></div><div class="block short"></div>
  <p>It is embedded with <code>data-public-key="${publicKey}"</code>.</p>
</main>
<script src="/widget.js" data-public-key="${publicKey}" async></script>
</body>
</html>
`;
}

/**
 * The preview pages as a static site of the server (answered before the route table; GET and HEAD only).
 * Throws AppError 404 `not_found` for a malformed key or any other path, 405 for other methods.
 */
export function loadWidgetPreview(): StaticSite {
  return {
    mount: PREVIEW_MOUNT,
    available: true,
    files: [],
    owns: (path) => path === PREVIEW_MOUNT || path.startsWith(`${PREVIEW_MOUNT}/`),
    answer(method, path): StaticResult {
      if (method !== 'GET' && method !== 'HEAD') {
        throw new AppError('method_not_allowed', `${method} is not allowed here; allowed: GET, HEAD.`, { headers: { ...HEADERS, Allow: 'GET, HEAD' } });
      }
      const key = path.slice(PREVIEW_MOUNT.length + 1);
      if (!KEY.test(key)) throw new AppError('not_found', 'No preview here: the path is /preview/ followed by the public key (pk_...) of a published agent.', { headers: HEADERS });
      return { kind: 'bytes', status: 200, contentType: 'text/html; charset=utf-8', body: Buffer.from(previewHtml(key), 'utf8'), headers: HEADERS };
    },
  };
}
