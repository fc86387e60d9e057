/**
 * Log lines through the daemon's LogBuffer with redaction on (a run with 10 secrets of 40
 * characters: every line is searched for each form of each value) vs off (a run with no secrets),
 * in this process, rounds alternating. Of the lines, 1 in 20 holds a secret.
 */
import { randomBytes } from 'node:crypto';
import type { LeasedRun, RunHubCaller } from '../src/daemon/runner/hub-caller.js';
import { LogBuffer } from '../src/daemon/runner/logs.js';
import { Redactor } from '../src/daemon/runner/redact.js';
import { createLogger } from '../src/shared/logger.js';
import type { BenchResult } from './index.js';

const ROUND_MS = 700;
const ROUNDS = 3;
const SECRETS = 10;

function lineSet(secrets: string[]): string[] {
  const filler = 'compiling module src/feature/thing.ts … ok (12 ms) cache=warm workers=4 ';
  return Array.from({ length: 1000 }, (_, i) =>
    i % 20 === 0 ? `${filler}token=${secrets[i % secrets.length]}` : `${filler}${i}`.padEnd(120, '.'),
  );
}

/** Lines per second pushed into a LogBuffer (uploads never run: the buffer is drained in place). */
function rate(redactor: Redactor | undefined, lines: string[]): number {
  const log = createLogger('bench', 'silent');
  const run = { id: 'r', epoch: 1, fenced: false } as unknown as LeasedRun;
  const buffer = new LogBuffer(run, {
    caller: {} as RunHubCaller,
    log,
    ...(redactor ? { redactor } : {}),
  });
  const sink = (buffer as unknown as { lines: unknown[] }).lines;
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ROUND_MS) {
    for (const text of lines) buffer.push({ stream: 'stdout', text, at: 0 });
    n += lines.length;
    sink.length = 0;
  }
  return n / ((performance.now() - start) / 1000);
}

export default async function bench(): Promise<BenchResult[]> {
  const secrets = Array.from({ length: SECRETS }, () => randomBytes(30).toString('base64'));
  const redactor = new Redactor();
  redactor.add(secrets);
  const lines = lineSet(secrets);
  let on = 0;
  let off = 0;
  for (let i = 0; i < ROUNDS; i++) {
    on += rate(redactor, lines);
    off += rate(undefined, lines);
  }
  return [
    {
      name: `log lines with redaction (${SECRETS} secrets)`,
      unit: 'lines/s',
      value: on / ROUNDS,
      baseline: { name: 'the same lines, no secrets', value: off / ROUNDS },
      higherIsBetter: true,
      note: `120-character lines, 1 in 20 holding a secret; ${ROUNDS}×${ROUND_MS} ms alternating`,
    },
  ];
}
