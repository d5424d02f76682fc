/**
 * The days and totals of the Usage page (pages/usage.tsx), as data: the 30 UTC days it shows, the tokens
 * per day of one agent or all, and when a threshold's period starts over. No DOM, so it is tested in Node
 * (test/unit/usage-days.test.ts).
 */
import type { components } from '../api-types.js';

type Schemas = components['schemas'];

type UsageDay = Schemas['UsageReport']['data'][number];
type Threshold = Schemas['UsageThresholds']['thresholds'][number];

/** Days the Usage page covers, ending today (UTC): the API's default range. */
export const DAYS = 30;

/** The `DAYS` UTC days (YYYY-MM-DD) ending on the UTC day of `now`, oldest first. */
export function lastDays(now: Date, days = DAYS): string[] {
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: days }, (_, i) => new Date(end - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

/**
 * When a threshold's period next starts over (the usage.threshold webhook fires once per period): the next
 * UTC midnight for `day`, the first of the next UTC month for `month`.
 */
export function nextReset(period: Threshold['period'], now: Date): Date {
  if (period === 'day') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** Input and output tokens and turns per day of `days`, summed over the rows of `agentId` (every agent when null). */
export function perDay(rows: UsageDay[], days: string[], agentId: string | null) {
  const by = new Map(days.map((d) => [d, { day: d, input: 0, output: 0, turns: 0 }]));
  for (const r of rows) {
    const slot = by.get(r.day);
    if (slot === undefined || (agentId !== null && r.agent_id !== agentId)) continue;
    slot.input += r.input_tokens;
    slot.output += r.output_tokens;
    slot.turns += r.turns;
  }
  return days.map((d) => by.get(d)!);
}
