import { Cron } from 'croner';

/**
 * Cron expressions and time zones (croner, a maintained cron parser: 5 fields, or 6 with seconds
 * first, IANA time zones). Pure functions of the expression, the zone and a reference time.
 *
 * Daylight-saving rule (croner's, kept by the tests in cron.test.ts):
 * - clocks go forward: a time that does not exist that day (02:30 when 02:00 jumps to 03:00) fires
 *   once, at the first valid time after the gap (03:00): no fire is lost;
 * - clocks go back: a fixed time that occurs twice (02:30 when 03:00 falls back to 02:00) fires
 *   once, at its first occurrence: nothing fires twice. Interval expressions (`*\/30 * * * *`) fire at
 *   every real instant they name, so the repeated hour gets its slots as real time passes.
 */

/** Why an expression or zone is refused, or null when both are usable. */
export function cronProblem(cron: string, timezone: string): { field: string; message: string } | null {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    return { field: 'timezone', message: `"${timezone}" is not an IANA time zone` };
  }
  try {
    const c = pattern(cron, timezone);
    c.nextRun(new Date(0));
  } catch (err) {
    return { field: 'cron', message: (err as Error).message.replace(/^CronPattern: /, '') };
  }
  return null;
}

function pattern(cron: string, timezone: string): Cron {
  return new Cron(cron.trim(), { timezone, paused: true, mode: '5-or-6-parts' });
}

/** The first scheduled time strictly after `afterMs`, or null when the expression has none. */
export function nextSlot(cron: string, timezone: string, afterMs: number): number | null {
  return pattern(cron, timezone).nextRun(new Date(afterMs))?.getTime() ?? null;
}

/**
 * Scheduled times from `fromMs` (included) to `toMs` (included), oldest first: at most `max`, the
 * newest ones when there are more. `count` is how many there were in all.
 */
export function slotsBetween(
  cron: string,
  timezone: string,
  fromMs: number,
  toMs: number,
  max: number,
): { slots: number[]; count: number } {
  const c = pattern(cron, timezone);
  const slots: number[] = [];
  let count = 0;
  let at = c.nextRun(new Date(fromMs - 1));
  while (at && at.getTime() <= toMs) {
    slots.push(at.getTime());
    if (slots.length > max) slots.shift();
    count++;
    at = c.nextRun(at);
  }
  return { slots, count };
}
