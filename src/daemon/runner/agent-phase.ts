import { merged } from '../../shared/merged.js';
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
  // A fresh private folder for the phase's artifacts; what is in it when the agent ends goes to the hub.
  const artifactsDir = ctx.artifacts.phaseFolder(body.run_id, phase.name);
  run.artifactsDir = artifactsDir;
  const cwd = runDirectory(ctx.home, body);
  const agent = startAgent({
    manifest,
    cwd,
    // A run with no workspace works in a folder of its own under the daemon's home: one made ahead,
    // moved into place (an empty one left by an earlier phase is replaced). A workspace's folder is
    // the user's, and only made when it is missing.
    cwdReady: body.workspace_path === null && ctx.runFolders.take(cwd),
    outputFile: outputFile(ctx.home, body.run_id, phase.name, run.epoch),
    secrets,
    env: {
      ...phaseEnvironment({
        daemonUrl: ctx.daemonUrl(),
        runId: body.run_id,
        phase,
        inputs: body.inputs,
        outputs,
        review,
      }),
      SVC_ARTIFACTS_DIR: artifactsDir,
    },
    onLine: (line) => run.logs.push(merged(line, { phase: phase.name })),
    spawn: ctx.spawn,
  });
  run.agents.add(agent);
  try {
    if (run.stopped) agent.stop(ctx.killGraceMs);
    const pid = await agent.pid;
    await ctx.caller.report(run, 'phase.started', {
      phase: phase.name,
      ...(pid ? { pid } : {}),
    });
    const result = await agent.result;
    run.artifactsDir = null;
    await saveArtifacts(ctx, run, phase.name, artifactsDir);
    return result;
  } catch (err) {
    agent.stop(0);
    await agent.result;
    throw err;
  } finally {
    run.agents.delete(agent);
    run.artifactsDir = null;
  }
}

/**
 * The phase's artifacts go to the hub before the run moves on, so a run that ended lists them all;
 * a hub that cannot be reached keeps them in the spool (sent later) and does not fail the phase.
 */
async function saveArtifacts(ctx: RunnerContext, run: ActiveRun, phase: string, dir: string): Promise<void> {
  try {
    const n = await ctx.artifacts.collect(run.id, phase, dir);
    if (n > 0) await ctx.artifacts.flush(run.id, () => run.stopped || ctx.closing());
  } catch (err) {
    ctx.log.warn({ err, run_id: run.id, phase }, 'could not save the artifacts of a phase');
    run.systemLine(phase, `could not save the phase's artifacts: ${(err as Error).message}`);
  }
}
