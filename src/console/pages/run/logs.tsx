import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { attemptStarts } from '../../../shared/api/run-time.js';
import { api } from '../../api.js';
import { clockMs, formatTime, isoTime } from '../../format.js';
import { runStream, useLive } from '../../live.js';
import { addLines } from '../../log-lines.js';
import { formatRoute } from '../../router.js';
import { withAttemptMarkers } from '../../timeline.js';
import type { LogLine, Run } from '../../types.js';
import { ErrorNote } from '../../ui.js';

/**
 * A run's log lines: read with the `after` cursor, then followed from the run's event stream, whose
 * `log` events carry the lines themselves (no read per line). Without the stream, read again every
 * second.
 */

/** At most this many log lines stay in the page; older ones are dropped (the CLI shows them all). */
const MAX_LINES = 5000;

export function Logs({ run, live, phase }: { run: Run; live: boolean; phase: string | null }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [dropped, setDropped] = useState(0);
  const [follow, setFollow] = useState(true);
  const box = useRef<HTMLPreElement>(null);
  const last = useRef(0);
  useEffect(() => {
    last.current = 0;
    setLines([]);
    setDropped(0);
  }, [run.run_id]);
  const add = (fresh: readonly LogLine[]) => {
    if (fresh.length === 0) return;
    last.current = Math.max(last.current, fresh[fresh.length - 1]!.seq);
    setLines((prev) => {
      const { lines: kept, dropped: more } = addLines(prev, fresh, MAX_LINES);
      if (more > 0) setDropped((d) => d + more);
      return kept;
    });
  };
  const logs = useLive(
    async (signal) => {
      // Catch up in pages of 1000 (bounded per load).
      for (let i = 0; i < 10; i++) {
        const page = await api(
          'runs/logs',
          { run_id: run.run_id, after: last.current, limit: 1000 },
          { signal },
        );
        if (signal.aborted) return;
        add(page.data.filter((l) => l.seq > last.current));
        if (!page.has_more) break;
      }
      return null;
    },
    [run.run_id],
    live ? 1000 : null,
    // The stream wakes no load here: its log events carry the lines.
    live
      ? {
          ...runStream(run.run_id),
          onEvent: (e) => {
            if (e.event === 'log') add([e.data as LogLine]);
          },
        }
      : null,
  );
  useLayoutEffect(() => {
    const el = box.current;
    if (follow && el) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);
  const onScroll = () => {
    const el = box.current;
    if (!el) return;
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
    if (atBottom !== follow) setFollow(atBottom);
  };
  const shown = phase ? lines.filter((l) => l.phase === phase) : lines;
  return (
    <section aria-labelledby="logs-h" id="logs">
      <div class="section-head">
        <h2 id="logs-h">Logs</h2>
        <label class="check">
          <input
            type="checkbox"
            checked={follow}
            onChange={(e) => setFollow((e.target as HTMLInputElement).checked)}
          />
          Follow
        </label>
      </div>
      {phase ? (
        <p class="note">
          Phase <strong>{phase}</strong> only ·{' '}
          <a href={formatRoute({ name: 'run', id: run.run_id })}>all phases</a>
        </p>
      ) : null}
      <ErrorNote error={logs.error} what="Could not load the logs" />
      {dropped > 0 ? (
        <p class="note">{dropped} older lines are not shown; `svc runs logs` prints all.</p>
      ) : null}
      <pre
        class="logs"
        ref={box}
        onScroll={onScroll}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the log scrolls, so the keyboard must reach it
        tabIndex={0}
        role="log"
        aria-label="Run logs"
        aria-live="off"
      >
        {shown.length === 0 ? (
          <span class="muted">{logs.loading ? 'Loading…' : live ? 'No output yet.' : 'No output.'}</span>
        ) : (
          withAttemptMarkers(shown, attemptStarts(run, run.history ?? [])).map((row) =>
            'attempt' in row ? (
              <span key={`attempt-${row.attempt}`} class="line attempt">
                ── attempt {row.attempt} · {formatTime(row.at)} ──{'\n'}
              </span>
            ) : (
              <span key={row.line.seq} class={`line ${row.line.stream}`}>
                <time class="ts" dateTime={isoTime(row.line.at)} title={formatTime(row.line.at)}>
                  {clockMs(row.line.at)}
                </time>
                {row.line.phase ? <span class="tag">[{row.line.phase}]</span> : null}
                {row.line.text}
                {'\n'}
              </span>
            ),
          )
        )}
      </pre>
    </section>
  );
}
