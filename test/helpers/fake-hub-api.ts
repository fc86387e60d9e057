import type { HubApi } from '../../src/daemon/hub-api.js';

export interface HubCall {
  op: string;
  body: Record<string, unknown>;
}

/**
 * A HubApi whose `call` answers with `answer(op, body)` (throw HubUnreachableError or HubRefusedError
 * to play an unreachable or refusing hub) and records every call, for unit tests of the daemon's parts
 * that talk to a hub. The other operations are not used by those parts and throw.
 */
export function fakeHubApi(
  answer: (op: string, body: Record<string, unknown>) => unknown | Promise<unknown>,
): HubApi & { calls: HubCall[]; callsOf(op: string): Record<string, unknown>[] } {
  const calls: HubCall[] = [];
  const unused = () => Promise.reject(new Error('not used by this test'));
  return {
    hasCredentials: true,
    calls,
    callsOf: (op) => calls.filter((c) => c.op === op).map((c) => c.body),
    async call<T>(op: string, body: unknown): Promise<T> {
      const b = body as Record<string, unknown>;
      calls.push({ op, body: b });
      return (await answer(op, b)) as T;
    },
    claim: unused,
    whoami: unused,
    removeWorkspace: unused,
    artifactUpload: unused,
  };
}

/** A run under a lease as the runner's hub caller sees it, counting how often it was fenced. */
export function leasedRun(id = 'run_1', epoch = 3) {
  return {
    id,
    epoch,
    fenced: false,
    fences: 0,
    fence() {
      this.fenced = true;
      this.fences++;
    },
  };
}
