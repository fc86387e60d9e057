import { CancelRunBody, ChildEndedBody, ExecuteRunBody } from '../../shared/protocol.js';
import { DaemonError } from '../errors.js';
import { type RouteContext, route } from '../router.js';
import type { Runner } from './runner.js';

function runnerOf(ctx: RouteContext): Runner {
  if (!ctx.runner) throw new DaemonError('INTERNAL_ERROR', 'this daemon has no runner');
  return ctx.runner;
}

/** Hub → daemon run commands. Each answers at once; the run itself goes on in the background. */
export const runRoutes = [
  route({
    path: 'runs/execute',
    summary: 'Starts a run: its phases in order, agents as child processes. Answers at once.',
    transactional: false,
    input: ExecuteRunBody,
    async handler(ctx, input) {
      return runnerOf(ctx).execute(input);
    },
  }),
  route({
    path: 'runs/cancel',
    summary: 'Stops a run (SIGTERM, then SIGKILL after a grace period) and reports it cancelled.',
    transactional: false,
    input: CancelRunBody,
    async handler(ctx, input) {
      return runnerOf(ctx).cancel(input);
    },
  }),
  route({
    path: 'runs/child_ended',
    summary: 'A child run of one of this daemon’s runs ended.',
    transactional: false,
    input: ChildEndedBody,
    async handler(ctx, input) {
      return runnerOf(ctx).childEnded(input);
    },
  }),
];
