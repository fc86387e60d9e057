/** Pure formatting helpers (unit-tested in format.test.ts). */

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * A duration for people: `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 03 min`, `3 d 4 h`. Null, NaN and
 * negative durations (clock skew) are `—`.
 */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) {
    const s = Math.floor(ms / 100) / 10;
    return `${s.toFixed(1)} s`;
  }
  const totalS = Math.floor(ms / 1000);
  if (totalS < 3600) return `${Math.floor(totalS / 60)} min ${pad(totalS % 60)} s`;
  const totalMin = Math.floor(totalS / 60);
  if (totalMin < 24 * 60) return `${Math.floor(totalMin / 60)} h ${pad(totalMin % 60)} min`;
  const totalH = Math.floor(totalMin / 60);
  return `${Math.floor(totalH / 24)} d ${totalH % 24} h`;
}

/** `just now`, `42 s ago`, `5 min ago`, `3 h ago`, `2 d ago`; future times read `in 5 min`. */
export function formatRelative(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined) return '—';
  const diff = now - at;
  const abs = Math.abs(diff);
  if (abs < 5000) return 'just now';
  let text: string;
  if (abs < 60_000) text = `${Math.floor(abs / 1000)} s`;
  else if (abs < 3_600_000) text = `${Math.floor(abs / 60_000)} min`;
  else if (abs < 86_400_000) text = `${Math.floor(abs / 3_600_000)} h`;
  else text = `${Math.floor(abs / 86_400_000)} d`;
  return diff >= 0 ? `${text} ago` : `in ${text}`;
}

/** Local date and time, always with the date: `2025-11-21 14:03:22`. */
export function formatTime(at: number | null | undefined): string {
  if (at === null || at === undefined) return '—';
  const d = new Date(at);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * The runs filter's days (`YYYY-MM-DD`, local) as a time range in ms: from the start of `from` to the
 * end of `to` (both days included); a missing or malformed day leaves that side open.
 */
export function dayRange(
  from: string | null,
  to: string | null,
): { after: number | null; before: number | null } {
  const start = (day: string | null): number | null => {
    const m = day ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(day) : null;
    if (!m) return null;
    const t = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])).getTime();
    return Number.isNaN(t) ? null : t;
  };
  const end = start(to);
  return {
    after: start(from),
    before: end === null ? null : new Date(end).setDate(new Date(end).getDate() + 1),
  };
}

/** A log line's local clock time to the millisecond: `14:03:22.081` (the date is in its tooltip). */
export function clockMs(at: number): string {
  const d = new Date(at);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** Local date and minute, whatever the day: `2025-11-21 14:03`. */
export function formatStamp(at: number): string {
  const d = new Date(at);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** An ISO 8601 string for `<time datetime>` and tooltips. */
export function isoTime(at: number): string {
  return new Date(at).toISOString();
}

/** `awaiting_input` → `awaiting input`. */
export function humanize(code: string): string {
  return code.replace(/[._]/g, ' ');
}

/** Why a queued run waits: its full concurrency group, or null. */
export function waitingText(
  w: { key: string; value: string; limit: number; running: number } | null,
): string | null {
  return w ? `${w.key}=${w.value} full (${w.running}/${w.limit} running)` : null;
}

/** How long a run has taken so far (or took). */
export function runDuration(run: { started_at: number; completed_at: number | null }, now: number): number {
  return (run.completed_at ?? now) - run.started_at;
}

/** What a force-terminate blocker or trigger means, for the run page. */
export function explainBlocker(blocker: string | null): string {
  switch (blocker) {
    case 'already_terminal':
      return 'the run has already ended';
    case 'cancel_pending':
      return 'a cancel was sent to the daemon less than a minute ago; wait for it';
    case 'daemon_online_use_cancel':
      return 'its daemon is online and holds the run: use Cancel';
    case null:
      return '';
    default:
      return humanize(blocker);
  }
}

/** Shortens an id for display: the first 8 characters. */
export function shortId(id: string): string {
  return id.slice(0, 8);
}

export { formatBytes } from '../shared/bytes.js';
