import { createRequire } from 'node:module';
import type * as UwsTypes from 'uWebSockets.js';

const require = createRequire(import.meta.url);

/** The uWebSockets.js module and which build of it loaded. */
export interface LoadedUws {
  uws: typeof UwsTypes;
  /** e.g. `native uws_linux_x64_115.node`. */
  implementation: string;
}

/** The undocumented configuration entry point of the native addon (absent from the type definitions). */
interface UwsConfigurable {
  _cfg?: (key: string) => void;
}

/**
 * Loads uWebSockets.js and refuses its slow JavaScript fallback (the unofficial package silently falls
 * back to a node:http emulation when no native build matches this Node ABI). Throws an Error naming
 * the Node ABI when only the fallback is available.
 *
 * It also silences the `uWebSockets: 20` header that uWS writes into every response (product and
 * version disclosure, RFC 9110 section 10.2.4 advises against detail in `Server`). The build has no
 * documented switch; its addon exports `_cfg(key)`, which for the key `silent` calls
 * `uWS::Loop::get()->setSilent(true)` (uWebSockets.js src/addon.cpp `uWS_cfg`), and
 * `HttpResponse::writeMark()` then skips the header (`if (!getLoopData()->noMark)`). The flag belongs
 * to the calling thread's loop, which is the one the server runs on. Checked by test (no response
 * carries the header); if a future build drops `_cfg`, the header comes back and that test fails.
 */
export function loadUws(): LoadedUws {
  if (/^(true|1)$/i.test(process.env.UWS_USE_FALLBACK ?? '')) {
    throw new Error('UWS_USE_FALLBACK is set: Parley refuses the JavaScript fallback of uWebSockets.js; unset it.');
  }
  const uws = require('uWebSockets.js') as typeof UwsTypes;
  const native = String(uws.App).includes('[native code]');
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  if (!native) {
    throw new Error(
      `uWebSockets.js has no native build for this Node.js (${process.version}, ABI ${process.versions.modules}); ` +
      `it fell back to its slow JavaScript emulation, which Parley refuses. Use Node.js 20.`,
    );
  }
  (uws as unknown as UwsConfigurable)._cfg?.('silent');
  return { uws, implementation: `native ${binary}` };
}
