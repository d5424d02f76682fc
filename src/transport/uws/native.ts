import { createRequire } from 'node:module';
import type * as UwsTypes from 'uWebSockets.js';

const require = createRequire(import.meta.url);

/** The uWebSockets.js module and which build of it loaded. */
export interface LoadedUws {
  uws: typeof UwsTypes;
  /** e.g. `native uws_linux_x64_115.node`. */
  implementation: string;
}

/**
 * Loads uWebSockets.js and refuses its slow JavaScript fallback (the unofficial package silently falls
 * back to a node:http emulation when no native build matches this Node ABI). Throws an Error naming
 * the Node ABI when only the fallback is available.
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
  return { uws, implementation: `native ${binary}` };
}
