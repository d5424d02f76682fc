/** Reads a V8 .cpuprofile (node --cpu-prof) and lists the functions with the most self time. */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface SelfTime {
  fn: string;
  where: string;
  selfMs: number;
  share: number;
}

export function topSelfTime(path: string, limit = 20): { totalMs: number; top: SelfTime[] } {
  const p = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byNode = new Map<number, ProfileNode>(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, { fn: string; where: string; us: number }>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const node = byNode.get(p.samples[i]!);
    const dt = p.timeDeltas[i + 1] ?? 0; // a sample's time is the delta to the next one
    if (!node) continue;
    const cf = node.callFrame;
    const file = cf.url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, 'node_modules/').replace(/^.*\/dist\//, 'dist/');
    const where = file ? `${file}:${cf.lineNumber + 1}` : '';
    const key = `${cf.functionName}@${where}`;
    const e = self.get(key) ?? { fn: cf.functionName || '(anonymous)', where, us: 0 };
    e.us += dt;
    total += dt;
    self.set(key, e);
  }
  const top = [...self.values()].sort((a, b) => b.us - a.us).slice(0, limit)
    .map((e) => ({ fn: e.fn, where: e.where, selfMs: e.us / 1000, share: total > 0 ? e.us / total : 0 }));
  return { totalMs: total / 1000, top };
}

/** Self time per source file / package (node_modules/<pkg>, dist/<file>, node:internal, (native)). */
export function selfTimeByModule(path: string, limit = 15): { module: string; selfMs: number; share: number }[] {
  const { totalMs, all } = topSelfTimeAll(path);
  const by = new Map<string, number>();
  for (const e of all) {
    const file = e.where.replace(/:\d+$/, '');
    const pkg = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
    const key = pkg ? `node_modules/${pkg}` : file.startsWith('node:') ? 'node: (internals)' : file || e.fn;
    by.set(key, (by.get(key) ?? 0) + e.selfMs);
  }
  return [...by.entries()].sort((a, b) => b[1] - a[1]).slice(0, limit).map(([module, selfMs]) => ({ module, selfMs, share: totalMs > 0 ? selfMs / totalMs : 0 }));
}

function topSelfTimeAll(path: string): { totalMs: number; all: SelfTime[] } {
  const r = topSelfTime(path, Number.MAX_SAFE_INTEGER);
  return { totalMs: r.totalMs, all: r.top };
}

export function summarizeCpuProfile(path: string, limit = 20): string {
  const { totalMs, top } = topSelfTime(path, limit);
  const idle = top.find((t) => t.fn === '(idle)')?.selfMs ?? 0;
  if (top[0]?.fn === 'atomicsWaitLoop') return `  a worker thread (idle ${(top[0].share * 100).toFixed(0)}% in atomicsWaitLoop); skipped`;
  const lines = top.map((t) => `  ${t.selfMs.toFixed(0).padStart(8)} ms ${(t.share * 100).toFixed(1).padStart(5)}%  ${t.fn}  ${t.where}`);
  const mods = selfTimeByModule(path).map((m) => `  ${m.selfMs.toFixed(0).padStart(8)} ms ${(m.share * 100).toFixed(1).padStart(5)}%  ${m.module}`);
  return [`  profiled ${(totalMs / 1000).toFixed(1)} s, busy ${((totalMs - idle) / 1000).toFixed(1)} s; top self time:`, ...lines, '  self time by module:', ...mods].join('\n');
}
