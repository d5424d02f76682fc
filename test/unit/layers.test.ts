import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const depcruise = join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');

/** Runs the project's layer check in `cwd`; resolves with its exit code and output. */
async function check(cwd: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [depcruise, 'src', 'actors', '--config', join(root, '.dependency-cruiser.cjs')], { cwd });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout };
  }
}

const fixtures: string[] = [];
afterAll(() => { for (const d of fixtures) rmSync(d, { recursive: true, force: true }); });

/** A throwaway tree with the given files (path -> source) and the project's tsconfig. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'parley-layers-'));
  fixtures.push(dir);
  copyFileSync(join(root, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), source);
  }
  return dir;
}

describe('layer check (.dependency-cruiser.cjs, run by npm test)', () => {
  it('passes on this project and really reads it (every module resolved)', async () => {
    const { code, out } = await check(root);
    expect(out).toMatch(/no dependency violations found \((\d+) modules/);
    expect(Number(/\((\d+) modules/.exec(out)![1])).toBeGreaterThan(80);
    expect(code).toBe(0);
  });

  it('fails on an upward import, a store call from the transport, an impure machine and a cycle', async () => {
    const dir = tree({
      'src/store/records.ts': 'export interface Rec { id: string }\nexport const make = (): Rec => ({ id: "x" });\n',
      'src/store/up.ts': "import { Engine } from '../runtime/engine.js';\nexport const e = Engine;\n",
      'src/runtime/engine.ts': 'export class Engine {}\n',
      'src/transport/ok.ts': "import type { Rec } from '../store/records.js';\nexport const view = (r: Rec) => r.id;\n",
      'src/transport/bad.ts': "import { make } from '../store/records.js';\nexport const r = make();\n",
      'actors/m.ts': "import { Engine } from '../src/runtime/engine.js';\nexport const m = Engine;\n",
      'src/ids/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'src/ids/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
    });
    const { code, out } = await check(dir);
    expect(code).not.toBe(0);
    expect(out).toContain('store-below-domain: src/store/up.ts → src/runtime/engine.ts');
    expect(out).toContain('transport-through-runtime: src/transport/bad.ts → src/store/records.ts');
    expect(out).not.toContain('src/transport/ok.ts');
    expect(out).toContain('actors-are-pure: actors/m.ts → src/runtime/engine.ts');
    expect(out).toMatch(/no-circular: src\/ids\/a\.ts →\s+src\/ids\/b\.ts/);
  });

  it('keeps the dashboard (src/web) an island: no server code or Node.js module in it, and no server code importing it', async () => {
    const dir = tree({
      'src/ids/ids.ts': 'export const newId = () => "x";\n',
      'src/web/dashboard/ok.ts': "import { local } from './local.js';\nexport const ok = local;\n",
      'src/web/dashboard/local.ts': 'export const local = 1;\n',
      'src/web/dashboard/server.ts': "import { newId } from '../../ids/ids.js';\nexport const id = newId();\n",
      'src/web/dashboard/node.ts': "import { readFileSync } from 'node:fs';\nexport const r = readFileSync;\n",
      'src/transport/page.ts': "import { ok } from '../web/dashboard/ok.js';\nexport const p = ok;\n",
      'actors/none.ts': 'export const none = 0;\n',
    });
    const { code, out } = await check(dir);
    expect(code).not.toBe(0);
    expect(out).toContain('web-is-an-island: src/web/dashboard/server.ts → src/ids/ids.ts');
    expect(out).toContain('web-uses-preact-only: src/web/dashboard/node.ts → fs');
    expect(out).toContain('nothing-imports-web: src/transport/page.ts → src/web/dashboard/ok.ts');
    expect(out).not.toContain('src/web/dashboard/ok.ts →');
  });
});
