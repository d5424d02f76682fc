import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** Highest nice value (lowest priority) on Linux. */
export const MAX_NICE = 19;

/**
 * Linux thread id of the calling thread, from the `/proc/thread-self` link (`<pid>/task/<tid>`,
 * Linux 3.17+); null where there is no such link (other systems).
 */
export function currentThreadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return tid > 0 ? tid : null; // NaN (an unexpected link) is not > 0
  } catch {
    return null;
  }
}

/**
 * Lowers the CPU scheduling priority of the calling thread alone to nice value `nice` (0 = normal,
 * 19 = lowest), so that its work yields the CPU to the event loop that streams tokens. Linux keeps the
 * nice value per thread, and `setpriority(PRIO_PROCESS, tid, ...)` with a thread id changes that thread
 * only (setpriority(2), NOTES: "under the current Linux/NPTL implementation of POSIX threads, the nice
 * value is a per-thread attribute"); Node's `os.setPriority(pid, ...)` is that call. Under the CFS
 * scheduler a nice-10 thread weighs 110 against 1024 for nice 0 (kernel `sched_prio_to_weight`), so a
 * busy worker takes about a tenth of a core the event loop wants, and all of a core it does not.
 *
 * Never raises a priority (that needs privileges) and never throws: returns the thread's nice value
 * after the call, or null where per-thread priorities are not available (not Linux, no /proc) or the
 * call was refused.
 *
 * @throws RangeError when `nice` is not an integer in 0..19.
 */
export function lowerThreadPriority(nice: number): number | null {
  if (!Number.isInteger(nice) || nice < 0 || nice > MAX_NICE) throw new RangeError(`nice must be an integer in 0..${MAX_NICE}, got ${String(nice)}`);
  const tid = currentThreadId();
  if (tid === null) return null;
  try {
    const now = getPriority(tid);
    if (nice > now) setPriority(tid, nice);
    return getPriority(tid);
  } catch {
    return null;
  }
}
