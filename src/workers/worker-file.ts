import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * URL of the compiled worker module `file` (e.g. `ingest.worker.js`) beside the module at `moduleUrl`.
 * Workers always run compiled JavaScript: when `moduleUrl` is a TypeScript source (tests run sources),
 * the file is looked up at the same place under the project's `dist/`.
 *
 * @throws Error naming the missing file and telling to run `npm run build`.
 */
export function compiledWorkerUrl(moduleUrl: string, file: string): URL {
  if (moduleUrl.endsWith('.js')) return new URL(`./${file}`, moduleUrl);
  const sourceDir = path.dirname(fileURLToPath(moduleUrl));
  let root = sourceDir;
  while (!existsSync(path.join(root, 'package.json')) && path.dirname(root) !== root) root = path.dirname(root);
  const compiled = path.join(root, 'dist', path.relative(root, sourceDir), file);
  if (!existsSync(compiled)) {
    throw new Error(`worker ${compiled} not found: run \`npm run build\` first (workers run compiled JavaScript)`);
  }
  return pathToFileURL(compiled);
}
