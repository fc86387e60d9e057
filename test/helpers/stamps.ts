import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Agents that stamp their own start and end (`<dir>/<run id>.start`, `.end`, in ms), so a test
 * measures how many ran at once from the agents themselves, not from what the hub believes.
 */

/**
 * A /bin/sh agent, as cheap as an agent gets: `sh <script> <dir> <seconds> <go|hold|freeze>` stamps
 * its start, sleeps `seconds` (0: not at all), and with `hold` waits until `<dir>/release` exists or
 * its daemon is gone (the agents of a daemon killed with SIGKILL end too, as they would with the
 * daemon's machine going down), then stamps its end. Its daemon is the pid a test that kills or
 * freezes one wrote into `<dir>/daemon.pid`, else its parent process (the daemon's agent spawner).
 * `freeze` waits for `<dir>/<run id>.freeze` (a test writes it once the hub shows the run running),
 * then stops that daemon (SIGSTOP) and holds. Stopped (SIGTERM), it stamps its end and fails; killed
 * (SIGKILL, as a daemon stops the agent of a run that is no longer its own), it stamps nothing, and
 * `agentAlive` tells from its pid (`<dir>/<run id>.pid`, written before its start).
 */
const SH_STAMP = `d="$1"
trap 'date +%s%3N > "$d/$SVC_RUN_ID.end"; exit 1' TERM
echo $$ > "$d/$SVC_RUN_ID.pid"
date +%s%3N > "$d/$SVC_RUN_ID.start"
daemon="$PPID"
if [ -e "$d/daemon.pid" ]; then daemon="$(cat "$d/daemon.pid")"; fi
if [ "$3" = freeze ]; then
  while [ ! -e "$d/$SVC_RUN_ID.freeze" ]; do sleep 0.01; done
  kill -STOP "$daemon"
fi
if [ "$2" != 0 ]; then sleep "$2"; fi
if [ "$3" != go ]; then
  while [ ! -e "$d/release" ] && kill -0 "$daemon" 2>/dev/null; do sleep 0.02; done
fi
date +%s%3N > "$d/$SVC_RUN_ID.end"
`;

/** Writes the agent's script into `dir` and answers its file. */
export function writeShStamp(dir: string): string {
  const file = path.join(dir, 'stamp.sh');
  writeFileSync(file, SH_STAMP);
  return file;
}

/** The manifest of an exec agent `name` running the script: stamps into `stamps`. */
export function shStampAgent(
  name: string,
  script: string,
  stamps: string,
  opts: { ms?: number; hold?: boolean; freezeDaemon?: boolean } = {},
) {
  const seconds = opts.ms ? (opts.ms / 1000).toFixed(3) : '0';
  const mode = opts.freezeDaemon ? 'freeze' : opts.hold ? 'hold' : 'go';
  const command = ['/bin/sh', script, stamps, seconds, mode];
  return { name, version: '1.0.0', agent_type: 'exec', command };
}

export interface Span {
  run: string;
  start: number;
  /** Infinity while the agent has not stamped its end. */
  end: number;
}

/** The agents that started, with their start and end stamps. */
export function spans(dir: string): Span[] {
  const out: Span[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.start'))) {
    const run = f.slice(0, -'.start'.length);
    const end = path.join(dir, `${run}.end`);
    out.push({
      run,
      start: Number(readFileSync(path.join(dir, f), 'utf8')),
      end: existsSync(end) ? Number(readFileSync(end, 'utf8')) : Number.POSITIVE_INFINITY,
    });
  }
  return out;
}

/** Whether the agent of `runId` still runs (it wrote its pid as it started). */
export function agentAlive(dir: string, runId: string): boolean {
  try {
    process.kill(Number(readFileSync(path.join(dir, `${runId}.pid`), 'utf8')), 0);
    return true;
  } catch {
    return false;
  }
}

/** How many agents have stamped their start. */
export const startedCount = (dir: string) => readdirSync(dir).filter((n) => n.endsWith('.start')).length;

/** The most agents alive at once; at equal stamps an end comes first (a slot frees after it). */
export function maxConcurrent(s: Span[]): number {
  const events = s.flatMap((x) => [
    { at: x.start, d: 1 },
    { at: x.end, d: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let max = 0;
  for (const e of events) {
    now += e.d;
    max = Math.max(max, now);
  }
  return max;
}
