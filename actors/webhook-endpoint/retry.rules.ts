/**
 * The retry schedule of a webhook delivery (API.md "Webhooks"): pure, tested on its own.
 */

/**
 * The default schedule, ms: the delay before each attempt. The first is at once, then 5 s, 5 min, 30 min,
 * 2 h, 5 h, 10 h, 10 h: 8 attempts over about 28 hours.
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/**
 * When to try again after attempt number `attemptsMade` (1-based) failed: `schedule[attemptsMade]` ms
 * from now, spread by +-`jitter` (0.2 = +-20%) with `random` in [0, 1), and never before the receiver's
 * `Retry-After` (`retryAfterMs`, if it gave one). `giveUp` once the schedule is used up.
 */
export function nextRetry(attemptsMade: number, schedule: readonly number[], random: number, jitter = 0.2, retryAfterMs?: number): { retryInMs: number } | { giveUp: true } {
  if (attemptsMade >= schedule.length) return { giveUp: true };
  const base = schedule[attemptsMade]!;
  const spread = base * (1 - jitter + 2 * jitter * random);
  return { retryInMs: Math.round(Math.max(spread, retryAfterMs ?? 0)) };
}

/**
 * The `Retry-After` of a response as ms from now (RFC 9110 10.2.3: delay-seconds or an HTTP-date), or
 * undefined when absent or unreadable. Capped at `maxMs` so a receiver cannot park a delivery for ever.
 */
export function retryAfterMs(header: string | undefined, nowMs: number, maxMs = 86_400_000): number | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const v = header.trim();
  if (/^\d+$/.test(v)) return Math.min(Number(v) * 1000, maxMs);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - nowMs), maxMs);
}
