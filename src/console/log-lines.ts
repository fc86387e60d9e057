import type { LogLine } from './types.js';

/**
 * A run's log lines as the page keeps them: `fresh` added to `kept`, in sequence order, each line
 * once. Lines come from two places that overlap (a `runs/logs` read and the run's event stream), so
 * a line may come twice or before lines older than it; usually it comes next, and is appended. At
 * most `max` lines are kept, the newest: `dropped` counts those left out.
 */
export function addLines(
  kept: readonly LogLine[],
  fresh: readonly LogLine[],
  max: number,
): { lines: LogLine[]; dropped: number } {
  let lines: LogLine[];
  const last = kept.length > 0 ? kept[kept.length - 1]!.seq : 0;
  if (fresh.every((l, i) => l.seq > (i > 0 ? fresh[i - 1]!.seq : last))) lines = kept.concat(fresh);
  else {
    const bySeq = new Map(kept.map((l) => [l.seq, l]));
    for (const l of fresh) bySeq.set(l.seq, l);
    lines = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  }
  if (lines.length <= max) return { lines, dropped: 0 };
  return { lines: lines.slice(lines.length - max), dropped: lines.length - max };
}
