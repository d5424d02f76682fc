/** /proc readers (Linux): process CPU time and RSS, plus the machine description stored with results. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { parseOpenFilesLimit } from './ws-frames.js';

let clockTicks: number | undefined;

/** USER_HZ (clock ticks per second of /proc/<pid>/stat times); 100 when getconf is unavailable. */
export function clkTck(): number {
  if (clockTicks === undefined) {
    try {
      const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 2000 }).trim());
      clockTicks = Number.isFinite(n) && n > 0 ? n : 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * CPU seconds (user + system, utime + stime of /proc/<pid>/stat) the process has used so far;
 * NaN when the process is gone. Resolution is one clock tick (usually 10 ms).
 */
export function cpuSeconds(pid: number): number {
  const t = cpuTimes(pid);
  return t.user + t.sys;
}

/** User and system CPU seconds (utime, stime of /proc/<pid>/stat); NaN when the process is gone. */
export function cpuTimes(pid: number): { user: number; sys: number } {
  return statTimes(`/proc/${pid}/stat`);
}

/**
 * CPU seconds (user + system) of the process's main thread alone (/proc/<pid>/task/<pid>/stat: on Linux
 * the main thread's id is the process id); NaN when the process is gone. For a Node server that is the
 * event loop's thread: the process total minus this is what its worker threads (Parley's SQLite writer,
 * ingestion workers) and V8's helper threads (concurrent GC and compilation) used.
 */
export function mainThreadCpuSeconds(pid: number): number {
  const t = statTimes(`/proc/${pid}/task/${pid}/stat`);
  return t.user + t.sys;
}

/** utime and stime of a /proc stat file, seconds; NaN when unreadable. */
function statTimes(file: string): { user: number; sys: number } {
  try {
    const stat = readFileSync(file, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state is field 3.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(rest[11]) / clkTck(), sys: Number(rest[12]) / clkTck() };
  } catch {
    return { user: Number.NaN, sys: Number.NaN };
  }
}

/**
 * Busy CPU seconds of the whole host since boot, summed over all CPUs (/proc/stat `cpu` line: user + nice +
 * system + irq + softirq + steal, i.e. everything but idle and iowait); NaN when unreadable. The
 * difference over a window minus the rig's own processes is what everything else on the machine used.
 */
export function hostBusySeconds(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
    return busy / clkTck();
  } catch {
    return Number.NaN;
  }
}

/** Options of {@link waitForQuietHost}. */
export interface QuietGate {
  /** The host counts as quiet when everything on it together is busy at most this many CPU s/s. */
  maxBusyCpuPerS: number;
  /** Give up waiting after this long (ms) and go on, busy or not. */
  maxWaitMs: number;
}

/**
 * Waits until the whole host (every process, ours included: a server still busy with the previous
 * window counts too) has been busy at most `maxBusyCpuPerS` CPU s/s over a 500 ms sample, or `maxWaitMs`
 * passed. Resolves with the ms waited, the last sample (CPU s/s) and whether the host was quiet.
 */
export async function waitForQuietHost(gate: QuietGate): Promise<{ waitedMs: number; busyCpuPerS: number; quiet: boolean }> {
  const t0 = performance.now();
  let busy = Number.NaN;
  for (let i = 0; i < 10_000; i++) {
    const a = hostBusySeconds();
    const s0 = performance.now();
    await new Promise<void>((r) => setTimeout(r, 500));
    busy = (hostBusySeconds() - a) / ((performance.now() - s0) / 1000);
    if (!(busy > gate.maxBusyCpuPerS)) return { waitedMs: performance.now() - t0, busyCpuPerS: busy, quiet: true };
    if (performance.now() - t0 >= gate.maxWaitMs) break;
  }
  return { waitedMs: performance.now() - t0, busyCpuPerS: busy, quiet: false };
}

/**
 * The ids of the living child processes of `pid` (every /proc/<n>/stat whose parent id, field 4, is
 * `pid`), in /proc's order (ascending ids); [] when there are none or /proc is unreadable. A PARLEY_PROCESSES primary's
 * children are found this way (the bench measures each one's CPU and RSS).
 */
export function childPids(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      // After the command name (which may hold spaces and parentheses): state, then the parent id.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[1]) === pid) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Resident set size in bytes (VmRSS of /proc/<pid>/status); NaN when the process is gone. */
export function rssBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Open file descriptors of `pid` (entries of /proc/<pid>/fd); NaN when unreadable. */
export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/**
 * Host-wide TCP counters (/proc/net/netstat TcpExt, /proc/net/snmp Tcp): accept-queue overflows and SYN
 * retransmissions reveal connection bursts the servers did not accept in time (the client retries a
 * dropped SYN after 1 s).
 */
export function tcpCounters(): { listenOverflows: number; synRetrans: number; retransSegs: number } {
  const read = (file: string, prefix: string): Record<string, number> => {
    try {
      const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith(`${prefix}:`));
      if (lines.length < 2) return {};
      const keys = lines[0]!.split(/\s+/).slice(1);
      const vals = lines[1]!.split(/\s+/).slice(1).map(Number);
      return Object.fromEntries(keys.map((k, i) => [k, vals[i] ?? Number.NaN]));
    } catch {
      return {};
    }
  };
  const ext = read('/proc/net/netstat', 'TcpExt');
  const tcp = read('/proc/net/snmp', 'Tcp');
  return { listenOverflows: ext.ListenOverflows ?? Number.NaN, synRetrans: ext.TCPSynRetrans ?? Number.NaN, retransSegs: tcp.RetransSegs ?? Number.NaN };
}

export function tcpDelta(a: ReturnType<typeof tcpCounters>, b: ReturnType<typeof tcpCounters>): ReturnType<typeof tcpCounters> {
  return { listenOverflows: b.listenOverflows - a.listenOverflows, synRetrans: b.synRetrans - a.synRetrans, retransSegs: b.retransSegs - a.retransSegs };
}

/**
 * CPU seconds of several processes between `start()` and `stop()`, plus the host's busy CPU seconds over
 * the same window (`cpuS.host`) and what is left of it after the measured processes (`cpuS.others`:
 * other sessions on a shared machine, idle rig processes, the kernel's own threads).
 */
export class CpuMeter {
  private readonly startCpu = new Map<string, { user: number; sys: number }>();
  private startedAt = 0;
  private hostAt = 0;

  constructor(private readonly pids: Record<string, number>) {}

  start(): this {
    this.startedAt = performance.now();
    this.hostAt = hostBusySeconds();
    for (const [name, pid] of Object.entries(this.pids)) this.startCpu.set(name, cpuTimes(pid));
    return this;
  }

  /** CPU seconds (user + sys, and sys alone) used per process since start, `host` and `others`, and the wall seconds. */
  stop(): { wallS: number; cpuS: Record<string, number>; sysS: Record<string, number> } {
    const wallS = (performance.now() - this.startedAt) / 1000;
    const cpuS: Record<string, number> = {};
    const sysS: Record<string, number> = {};
    let ours = 0;
    const counted = new Set<number>();
    for (const [name, pid] of Object.entries(this.pids)) {
      const a = this.startCpu.get(name) ?? { user: Number.NaN, sys: Number.NaN };
      const b = cpuTimes(pid);
      cpuS[name] = b.user + b.sys - a.user - a.sys;
      sysS[name] = b.sys - a.sys;
      // The same process may be measured under two names (direct: the mock is the server).
      if (!counted.has(pid) && Number.isFinite(cpuS[name])) ours += cpuS[name]!;
      counted.add(pid);
    }
    cpuS.host = hostBusySeconds() - this.hostAt;
    cpuS.others = Math.max(0, cpuS.host - ours);
    return { wallS, cpuS, sysS };
  }
}

/** What the results JSON records about the machine and the code. */
export interface MachineInfo {
  cpus: { model: string; count: number };
  total_mem_bytes: number;
  node: string;
  platform: string;
  kernel: string;
  git_commit: string;
  git_dirty: boolean;
  open_files_limit: string;
}

export function machineInfo(projectRoot: string): MachineInfo {
  const cpus = os.cpus();
  let commit = 'unknown';
  let dirty = false;
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: projectRoot, encoding: 'utf8', timeout: 5000 }).trim();
    dirty = execFileSync('git', ['status', '--porcelain'], { cwd: projectRoot, encoding: 'utf8', timeout: 5000 }).trim() !== '';
  } catch {
    // not a git checkout
  }
  let limit = 'unknown';
  try {
    limit = execFileSync('bash', ['-c', `ulimit -n ${OPEN_FILES_WANTED} 2>/dev/null || ulimit -n $(ulimit -Hn) 2>/dev/null; ulimit -n`], { encoding: 'utf8', timeout: 2000 }).trim();
  } catch {
    // no bash
  }
  return {
    cpus: { model: cpus[0]?.model ?? 'unknown', count: cpus.length },
    total_mem_bytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    git_commit: commit,
    git_dirty: dirty,
    open_files_limit: limit,
  };
}

/** The open-files limit asked for in every spawned process (capped at the hard limit when lower). */
export const OPEN_FILES_WANTED = 65536;

/** The soft open-files limit (`ulimit -n`) of process `pid` from /proc/<pid>/limits; NaN when unreadable or unlimited. */
export function openFilesLimit(pid: number): number {
  try {
    return parseOpenFilesLimit(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  } catch {
    return Number.NaN;
  }
}
