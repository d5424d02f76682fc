/**
 * Entry point of the widget bundle (scripts/build-web.mjs -> dist/web/widget/widget.js, served at
 * /widget.js). Embedded with one tag on any page (docs/widget.md):
 *
 *   <script src="https://<parley>/widget.js" data-public-key="pk_..." async></script>
 *
 * with optional `data-title` (panel title), `data-color` (accent, any CSS color) and `data-open` (open
 * at load). The API is the script's own origin. Everything is drawn in the shadow root of a
 * `<parley-widget>` element appended to the body, so the page's CSS cannot reach it and its CSS stays in.
 */
import { render } from 'preact';
import { PublicApi } from './api.js';
import { Widget } from './app.js';
import { Conversation } from './conversation.js';

/** The widget's stylesheet, minified and inlined by the build (src/web/widget/styles.css). */
declare const __WIDGET_CSS__: string;

const HOST_TAG = 'parley-widget';

function boot(script: HTMLScriptElement): void {
  const publicKey = script.dataset.publicKey?.trim() ?? '';
  if (!/^pk_[A-Za-z0-9_-]+$/.test(publicKey)) {
    console.error('Parley widget: the script tag needs data-public-key="pk_..." (the agent\'s public key).');
    return;
  }
  const base = new URL(script.src, location.href).origin;
  const title = script.dataset.title?.trim() || 'Chat with us';
  const openAttr = script.dataset.open;
  const open = openAttr !== undefined && openAttr !== 'false' && openAttr !== '0';

  const host = document.createElement(HOST_TAG);
  host.setAttribute('data-public-key', publicKey);
  const shadow = host.attachShadow({ mode: 'open' });
  const style = document.createElement('style');
  style.textContent = __WIDGET_CSS__;
  shadow.appendChild(style);
  const color = script.dataset.color?.trim();
  if (color !== undefined && color !== '' && CSS.supports('color', color)) host.style.setProperty('--pw-accent', color);
  const mount = document.createElement('div');
  shadow.appendChild(mount);
  document.body.appendChild(host);

  render(<Widget conversation={new Conversation(new PublicApi(base, publicKey))} options={{ title, open }} />, mount);
}

const current = document.currentScript;
const script = current instanceof HTMLScriptElement && current.src !== ''
  ? current
  : document.querySelector<HTMLScriptElement>('script[src][data-public-key]');
if (script === null) {
  console.error('Parley widget: cannot find its own <script> tag.');
} else if (document.body === null) {
  addEventListener('DOMContentLoaded', () => boot(script), { once: true });
} else {
  boot(script);
}
