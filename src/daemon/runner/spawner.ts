import { type ChildProcess, spawn } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';

/**
 * Agents are started by a small helper process of the daemon, not by the daemon itself. Node's
 * `spawn` forks the calling process, and a fork copies the caller's page tables: from a 45 MB
 * process it takes under a millisecond, from a daemon of 150 MB about 4.5 ms, during which the
 * daemon's event loop (its tunnel, its local API, every other run) waits. The helper is a bare
 * `node -e` with no modules of svc and an empty environment of its own: it starts each agent in a
 * process group of its own (as the daemon did), sends back its pid, its output as it comes, and its
 * exit once the output has ended, over the IPC channel (structured clone, so output stays bytes).
 *
 * The daemon still signals agents itself (their process groups, by pid). When the helper dies (it
 * was killed, say), the agents it started lose the parent that would learn their exit: each is
 * stopped (SIGKILL to its group) and ends with an error naming why, and the next agent starts a new
 * helper. When the daemon dies, the helper sees its channel close and exits; its agents run on, as
 * they did when the daemon started them itself (each in its own process group), and the daemon's
 * next start reports their runs (recover.ts).
 */

/** How an agent process ended: its exit code or signal, or the error that kept it from starting. */
export type AgentExit = { code: number | null; signal: NodeJS.Signals | null } | { error: string };

/** An agent process as the runner sees it (agent.ts). */
export interface AgentProcess {
  /** Its pid once it runs; null when it could not start. */
  readonly pid: Promise<number | null>;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Settles once the process ended and all its output was delivered; never rejects. */
  readonly exit: Promise<AgentExit>;
}

export interface AgentCommand {
  cwd: string;
  env: Record<string, string>;
}

export type Spawn = (cmd: string, args: string[], opts: AgentCommand) => AgentProcess;

/** The helper: CommonJS for `node -e`, Node's own modules only. */
const HELPER = `'use strict';
const { spawn } = require('node:child_process');
process.on('disconnect', () => process.exit(0));
const send = (m) => { if (process.connected) process.send(m); };
process.on('message', (m) => {
  let child;
  try {
    child = spawn(m.cmd, m.args, { cwd: m.cwd, env: m.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  } catch (err) {
    return send({ id: m.id, error: String(err && err.message) });
  }
  let started = child.pid !== undefined;
  child.on('error', (err) => { if (!started) { started = true; send({ id: m.id, error: err.message }); } });
  if (!started) return;
  send({ id: m.id, pid: child.pid });
  child.stdout.on('data', (data) => send({ id: m.id, fd: 1, data }));
  child.stderr.on('data', (data) => send({ id: m.id, fd: 2, data }));
  child.on('close', (code, signal) => send({ id: m.id, code, signal }));
});
`;

type HelperMessage =
  | { id: number; pid: number }
  | { id: number; error: string }
  | { id: number; fd: 1 | 2; data: Uint8Array }
  | { id: number; code: number | null; signal: NodeJS.Signals | null };

interface Pending {
  pid: number | null;
  started(pid: number | null): void;
  stdout: PassThrough;
  stderr: PassThrough;
  ended(exit: AgentExit): void;
}

/** A helper process and the agents it started that have not ended. */
interface Helper {
  proc: ChildProcess;
  agents: Map<number, Pending>;
}

export class Spawner {
  private helper: Helper | null = null;
  private nextId = 1;
  private closed = false;

  /**
   * Starts the helper now, so that the first agent does not wait for Node to start. `node` is the
   * executable that runs it (this process's own).
   */
  constructor(private readonly node = process.execPath) {
    this.helper = this.startHelper();
  }

  readonly spawn: Spawn = (cmd, args, opts) => {
    let started!: (pid: number | null) => void;
    let ended!: (exit: AgentExit) => void;
    const [stdout, stderr] = [new PassThrough(), new PassThrough()];
    const agent: AgentProcess = {
      pid: new Promise((resolve) => (started = resolve)),
      stdout,
      stderr,
      exit: new Promise((resolve) => (ended = resolve)),
    };
    const pending: Pending = { pid: null, started, stdout, stderr, ended };
    if (this.closed) {
      settle(pending, { error: 'the daemon is stopping' });
      return agent;
    }
    // A helper whose channel closed is on its way out: its exit settles its own agents.
    if (!this.helper?.proc.connected) this.helper = this.startHelper();
    const { proc, agents } = this.helper;
    const id = this.nextId++;
    agents.set(id, pending);
    held(proc, true);
    proc.send({ id, cmd, args, cwd: opts.cwd, env: opts.env });
    return agent;
  };

  /** The helper's pid while it runs (operations and tests). */
  get helperPid(): number | undefined {
    return this.helper?.proc.pid;
  }

  /** Stops the helper (agents still running are the runner's to stop first). */
  async close(): Promise<void> {
    this.closed = true;
    const proc = this.helper?.proc;
    if (!proc || proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    held(proc, true);
    if (proc.connected) proc.disconnect();
    else proc.kill('SIGKILL');
    await exited;
  }

  private startHelper(): Helper {
    const proc = spawn(this.node, ['-e', HELPER], {
      // Nothing of the daemon's environment (no NODE_OPTIONS, no credentials): each agent's comes
      // with its message.
      env: {},
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      // A process group of its own, as the agents have: Ctrl-C in the daemon's terminal (or a signal
      // to the daemon's group) reaches the daemon, which stops its agents with their grace period.
      detached: true,
      serialization: 'advanced',
    });
    const helper: Helper = { proc, agents: new Map() };
    proc.on('message', (m: HelperMessage) => onMessage(helper, m));
    const lost = (why: string) => {
      if (this.helper === helper) this.helper = null;
      for (const a of helper.agents.values()) {
        if (a.pid !== null) signalGroup(a.pid, 'SIGKILL');
        settle(a, { error: this.closed ? 'the daemon is stopping' : why });
      }
      helper.agents.clear();
    };
    proc.on('error', (err) => {
      // A helper that could not start never exits: its agents end here. Otherwise (a message that
      // could not be sent to a helper on its way out) its exit settles them.
      if (proc.pid === undefined) lost(`could not start the agent spawner (${this.node}): ${err.message}`);
    });
    proc.once('exit', () =>
      lost('the process that started the agent ended unexpectedly; the agent was stopped'),
    );
    held(proc, false);
    return helper;
  }
}

function onMessage(helper: Helper, m: HelperMessage): void {
  const a = helper.agents.get(m.id);
  if (!a) return;
  if ('pid' in m) {
    a.pid = m.pid;
    a.started(m.pid);
  } else if ('data' in m) {
    (m.fd === 1 ? a.stdout : a.stderr).write(m.data);
  } else {
    helper.agents.delete(m.id);
    if (helper.agents.size === 0) held(helper.proc, false);
    settle(a, 'error' in m ? { error: m.error } : { code: m.code, signal: m.signal });
  }
}

/** Ends the agent: its output streams first, then (once they are read to the end) its exit. */
function settle(a: Pending, exit: AgentExit): void {
  a.started(a.pid);
  void Promise.all([drained(a.stdout), drained(a.stderr)]).then(() => a.ended(exit));
}

/** Resolves once a stream's reader has had everything (at once for a stream nobody reads). */
function drained(s: PassThrough): Promise<void> {
  const read = s.readableFlowing === true || s.listenerCount('readable') > 0;
  const done =
    read && !s.readableEnded ? new Promise<void>((r) => s.once('end', () => r())) : Promise.resolve();
  s.end();
  return done;
}

/** Whether the helper keeps the daemon's process alive: while agents run, not when idle. */
function held(helper: ChildProcess, yes: boolean): void {
  if (yes) {
    helper.ref();
    helper.channel?.ref();
  } else {
    helper.unref();
    helper.channel?.unref();
  }
}

/** Signals a process group (an agent leads one: its pid is the group's id). */
export function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // the group is gone
  }
}
