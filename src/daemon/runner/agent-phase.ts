import type { ExecuteRunBody, RunPhase } from '../../shared/protocol.js';
import type { ActiveRun } from './active-run.js';
import { startAgent } from './agent.js';
import type { PhaseResult } from './children.js';
import type { RunnerContext } from './context.js';
import { outputFile, phaseEnvironment, type ReviewRound, runDirectory } from './plan.js';

/**
 * An agent phase: the phase's `exec` agent as a child process in the run's directory, reported
 * `phase.started` with its pid; its output lines go to the run's logs. A run stopped meanwhile stops
 * the agent it just started; an error while reporting kills it before passing the error on.
 */
export async function runAgentPhase(
  ctx: RunnerContext,
  run: ActiveRun,
  body: ExecuteRunBody,
  phase: RunPhase,
  outputs: Record<string, unknown>,
  review: ReviewRound | null,
): Promise<PhaseResult> {
  const manifest = phase.agent_id ? body.agents[phase.agent_id] : undefined;
  if (!manifest) return { ok: false, error: `no manifest for agent ${phase.agent ?? '?'}` };
  if (manifest.agent_type !== 'exec')
    return { ok: false, error: `agent type ${manifest.agent_type} is not supported` };
  // The phase's secrets (CONTRACT.md §12): every one it names, or the agent does not start.
  const secrets: Record<string, string> = {};
  const missing: string[] = [];
  for (const name of manifest.secrets ?? []) {
    const value = body.secrets?.[name];
    if (value === undefined) missing.push(name);
    else secrets[name] = value;
  }
  if (missing.length > 0) {
    return {
      ok: false,
      error: `missing secret${missing.length > 1 ? 's' : ''} ${missing.join(', ')}: set ${missing.length > 1 ? 'them' : 'it'} in the realm or its organization (secrets/set)`,
    };
  }
  const agent = startAgent({
    manifest,
    cwd: runDirectory(ctx.home, body),
    outputFile: outputFile(ctx.home, body.run_id, phase.name, run.epoch),
    secrets,
    env: phaseEnvironment({
      daemonUrl: ctx.daemonUrl(),
      runId: body.run_id,
      phase,
      inputs: body.inputs,
      outputs,
      review,
    }),
    onLine: (line) => run.logs.push({ ...line, phase: phase.name }),
    ...(ctx.spawn ? { spawn: ctx.spawn } : {}),
  });
  run.agents.add(agent);
  try {
    if (run.stopped) agent.stop(ctx.killGraceMs);
    await ctx.caller.report(run, 'phase.started', {
      phase: phase.name,
      ...(agent.pid ? { pid: agent.pid } : {}),
    });
    return await agent.result;
  } catch (err) {
    agent.stop(0);
    await agent.result;
    throw err;
  } finally {
    run.agents.delete(agent);
  }
}
