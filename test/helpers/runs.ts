import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestHub } from './hub.js';

/** A directory of agent scripts written by a test (CommonJS, run with `node`). */
export function agentDir(): { dir: string; write(name: string, source: string): string; cleanup(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-agents-'));
  return {
    dir,
    write(name, source) {
      const file = path.join(dir, `${name}.cjs`);
      writeFileSync(file, source);
      return file;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Registers an exec agent running `node <script>`. */
export async function registerAgent(
  h: TestHub,
  orgId: string,
  name: string,
  script: string,
  extra: Record<string, unknown> = {},
) {
  const r = await h.ok('agents/register', {
    org_id: orgId,
    manifest: { name, version: '1.0.0', agent_type: 'exec', command: [process.execPath, script], ...extra },
  });
  return r.data;
}

export async function registerTeam(h: TestHub, orgId: string, name: string, phases: unknown[]) {
  const r = await h.ok('teams/register', { org_id: orgId, definition: { name, version: '1.0.0', phases } });
  return r.data;
}

/**
 * Polls `runs/get_by_id` until `done(run)` holds (no event exists for a client to await); a bounded
 * loop on a real condition. Fails with the last run seen.
 */
export async function waitForRun(
  h: TestHub,
  runId: string,
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
  done: (run: any) => boolean,
  timeoutMs = 20_000,
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
  let last: any = null;
  while (Date.now() < deadline) {
    last = (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`run ${runId} did not reach the expected state; last: ${JSON.stringify(last)}`);
}

export const ended = (run: { state: string }) =>
  ['succeeded', 'failed', 'cancelled', 'terminated', 'lost'].includes(run.state);
