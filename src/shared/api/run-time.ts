/**
 * How long a run worked and over how many attempts, from its history: one reading for the CLI and
 * the console, so both say the same thing.
 */
import { isTerminal } from './run-states.js';
import type { HistoryEntry, Run } from './runs.js';

/**
 * Where each attempt of a run begins: its start, then every move out of an ended state (a resume,
 * or a lost run offered again). A log line belongs to the last attempt begun at or before it.
 */
export function attemptStarts(run: Pick<Run, 'started_at'>, history: readonly HistoryEntry[]): number[] {
  const starts = [run.started_at];
  let ended = false;
  for (const e of history) {
    if (ended && !isTerminal(e.state)) starts.push(e.at);
    ended = isTerminal(e.state);
  }
  return starts;
}

export const attemptOf = (starts: readonly number[], at: number) => {
  let n = 1;
  for (let i = 1; i < starts.length; i++) if (at >= starts[i]!) n = i + 1;
  return n;
};

/**
 * The time the run spent `running` (an agent process at work), over how many attempts: waiting in
 * the queue, for input or a review, and the time between a failure and its resume do not count.
 */
export function runningTime(run: Run, history: readonly HistoryEntry[], now: number) {
  let ms = 0;
  let since: number | null = null;
  let attempts = 0;
  for (const e of history) {
    if (e.type === 'run.started' || e.type === 'run.resumed') attempts++;
    if (e.state === 'running' && since === null) since = e.at;
    else if (e.state !== 'running' && since !== null) {
      ms += e.at - since;
      since = null;
    }
  }
  if (since !== null && run.state === 'running') ms += now - since;
  return { ms, attempts };
}
