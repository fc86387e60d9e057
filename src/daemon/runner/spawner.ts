import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/**
 * Agents are started by a small helper process of the daemon, not by the daemon itself. Node's
 * `spawn` forks the calling process, and a fork copies the caller's page tables: from a 45 MB
 * process it takes under a millisecond on most machines, from a daemon of 150 MB about 4.5 ms,
 * during which the daemon's event loop (its tunnel, its local API, every other run) waits.
 *
 * Two helpers speak the same messages: the helper sends back each agent's pid, its output as it
 * comes, and its exit once the output has ended.
 * - The native one (native/spawner.c, built where a C compiler is found) starts agents with
 *   `posix_spawn`, which does not copy page tables at all (glibc's is a `vfork`). On the virtual
 *   machines this was measured on, where a fork costs several milliseconds even from a small
 *   process, that halves an agent's start (docs/benchmarks-record.md). Binary frames over its stdin and
 *   stdout.
 * - The Node one, a bare `node -e` with no modules of svc, where the native one was not built
 *   (Windows, or no compiler) or where it cannot start or ends before its first message (built for
 *   another machine): having started nothing, its agents, and the next ones, go to the Node one.
 *   Node's IPC channel (structured clone, so output stays bytes).
 * Each starts every agent in a process group of its own, with an empty environment of its own.
 *
 * The daemon still signals agents itself (their process groups, by pid). When the helper dies (it
 * was killed, say), the agents it started lose the parent that would learn their exit: each is
 * stopped (SIGKILL to its group) and ends with an error naming why, and the next agent starts a new
 * helper. When the daemon dies, the helper sees its input close and exits; its agents run on, as
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

/** The Node helper: CommonJS for `node -e`, Node's own modules only. */
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

/** What the daemon asks a helper for: one agent. */
interface SpawnRequest extends AgentCommand {
  id: number;
  cmd: string;
  args: string[];
}

interface Pending {
  /** What was asked of the helper (sent again to the Node helper when the native one cannot start). */
  request: SpawnRequest;
  pid: number | null;
  started(pid: number | null): void;
  stdout: PassThrough;
  stderr: PassThrough;
  ended(exit: AgentExit): void;
}

/** A helper process, the agents it started that have not ended, and how to talk to it. */
interface Helper {
  proc: ChildProcess;
  agents: Map<number, Pending>;
  /**
   * Whether it has said it runs (the native helper's first message). One that ends before has
   * started no agent: its requests can go to another helper.
   */
  ready: boolean;
  /** Whether it takes requests (false once it is on its way out). */
  open(): boolean;
  send(req: SpawnRequest): void;
  /** Asks it to exit (it does once it has read what was sent). */
  end(): void;
  /** Whether it keeps the daemon's process alive: while agents run, not when idle. */
  hold(yes: boolean): void;
}

export interface SpawnerOptions {
  /**
   * The native helper (native/spawner.c, built by `npm ci` or `npm run build` where a C compiler is
   * found); null starts the Node one. Default: the built helper when it is there.
   */
  native?: string | null;
  /** The executable that runs the Node helper (default: this process's own). */
  node?: string;
}

export class Spawner {
  private helper: Helper | null = null;
  private nextId = 1;
  private closed = false;
  private native: string | null;
  private readonly node: string;

  /** Starts the helper now, so that the first agent does not wait for it to start. */
  constructor(opts: SpawnerOptions = {}) {
    this.native = opts.native === undefined ? builtNativeHelper() : opts.native;
    this.node = opts.node ?? process.execPath;
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
    const request: SpawnRequest = { id: this.nextId++, cmd, args, cwd: opts.cwd, env: opts.env };
    const pending: Pending = { request, pid: null, started, stdout, stderr, ended };
    if (this.closed) settle(pending, { error: 'the daemon is stopping' });
    else this.ask(pending);
    return agent;
  };

  private ask(pending: Pending): void {
    // A helper that no longer takes requests is on its way out: its exit settles its own agents.
    if (!this.helper?.open()) this.helper = this.startHelper();
    const helper = this.helper;
    helper.agents.set(pending.request.id, pending);
    helper.hold(true);
    helper.send(pending.request);
  }

  /** Which helper starts the agents: `native` or `node` (operations and tests). */
  get kind(): 'native' | 'node' {
    return this.native === null ? 'node' : 'native';
  }

  /** The helper's pid while it runs (operations and tests). */
  get helperPid(): number | undefined {
    return this.helper?.proc.pid;
  }

  /** Stops the helper (agents still running are the runner's to stop first). */
  async close(): Promise<void> {
    this.closed = true;
    const helper = this.helper;
    const proc = helper?.proc;
    if (!helper || !proc || proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null)
      return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    helper.hold(true);
    if (helper.open()) helper.end();
    else proc.kill('SIGKILL');
    await exited;
  }

  /**
   * A native helper that does not run here (built for another machine, say) ended before it was
   * ready, so it started none of its agents: the Node helper starts them, and the next ones.
   */
  private fellBack(helper: Helper): boolean {
    if (helper.ready || this.native === null || this.closed) return false;
    this.native = null;
    if (this.helper === helper) this.helper = null;
    const waiting = [...helper.agents.values()];
    helper.agents.clear();
    for (const a of waiting) this.ask(a);
    return true;
  }

  private startHelper(): Helper {
    const helper = this.native === null ? nodeHelper(this.node) : nativeHelper(this.native);
    const { proc } = helper;
    const lost = (why: string) => {
      if (this.helper === helper) this.helper = null;
      for (const a of helper.agents.values()) {
        if (a.pid !== null) signalGroup(a.pid, 'SIGKILL');
        settle(a, { error: this.closed ? 'the daemon is stopping' : why });
      }
      helper.agents.clear();
    };
    const path = this.native ?? this.node;
    proc.on('error', (err) => {
      // A helper that could not start never exits: its agents end here. Otherwise (a message that
      // could not be sent to a helper on its way out) its exit settles them.
      if (proc.pid !== undefined) return;
      if (!this.fellBack(helper)) lost(`could not start the agent spawner (${path}): ${err.message}`);
    });
    proc.once('exit', () => {
      if (!this.fellBack(helper))
        lost('the process that started the agent ended unexpectedly; the agent was stopped');
    });
    helper.hold(false);
    return helper;
  }
}

/**
 * Both helpers run in a process group of their own, as the agents do: Ctrl-C in the daemon's
 * terminal (or a signal to the daemon's group) reaches the daemon, which stops its agents with their
 * grace period. Neither gets anything of the daemon's environment (no NODE_OPTIONS, no credentials):
 * each agent's comes with its request.
 */
function nodeHelper(node: string): Helper {
  const proc = spawn(node, ['-e', HELPER], {
    env: {},
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    detached: true,
    serialization: 'advanced',
  });
  const helper: Helper = {
    proc,
    agents: new Map(),
    ready: true,
    open: () => proc.connected,
    send: (req) => proc.send(req),
    end: () => proc.disconnect(),
    hold(yes) {
      if (yes) {
        proc.ref();
        proc.channel?.ref();
      } else {
        proc.unref();
        proc.channel?.unref();
      }
    },
  };
  proc.on('message', (m: HelperMessage) => onMessage(helper, m));
  return helper;
}

function nativeHelper(file: string): Helper {
  const proc = spawn(file, [], { env: {}, stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  const stdin = proc.stdin!;
  const stdout = proc.stdout!;
  // Writes to a helper that died fail here; its exit settles its agents.
  stdin.on('error', () => {});
  const helper: Helper = {
    proc,
    agents: new Map(),
    ready: false,
    open: () => stdin.writable && proc.exitCode === null && proc.signalCode === null,
    send(req) {
      const frame = encodeRequest(req);
      // As Node's spawn refuses such a string: the agent does not start.
      if (frame === null) queueMicrotask(() => onMessage(helper, { id: req.id, error: NUL_REFUSED }));
      else stdin.write(frame);
    },
    end: () => stdin.end(),
    hold(yes) {
      for (const handle of [proc, stdin, stdout] as { ref(): void; unref(): void }[]) {
        if (yes) handle.ref();
        else handle.unref();
      }
    },
  };
  const reader = new FrameReader((m) => {
    if ('ready' in m) {
      helper.ready = true;
      return;
    }
    // Named as Node names a spawn's error: `spawn /bin/sh ENOENT`.
    if ('error' in m) m.error = `spawn ${helper.agents.get(m.id)?.request.cmd ?? ''} ${m.error}`;
    onMessage(helper, m);
  });
  stdout.on('data', (chunk: Buffer) => reader.push(chunk));
  return helper;
}

const NUL_REFUSED = 'the command, its arguments, its folder and its environment must not hold a NUL byte';

/**
 * A request for the native helper (native/spawner.c): len, id, argc, envc, then the strings; null
 * when one of them holds a NUL byte, which would end it early.
 */
function encodeRequest(req: SpawnRequest): Buffer | null {
  const strings = [req.cmd, ...req.args, req.cwd, ...Object.entries(req.env).map(([k, v]) => `${k}=${v}`)];
  if (strings.some((s) => s.includes('\0'))) return null;
  const body = Buffer.from(`${strings.join('\0')}\0`, 'utf8');
  const head = Buffer.allocUnsafe(16);
  head.writeUInt32LE(12 + body.length, 0);
  head.writeUInt32LE(req.id, 4);
  head.writeUInt32LE(1 + req.args.length, 8);
  head.writeUInt32LE(Object.keys(req.env).length, 12);
  return Buffer.concat([head, body]);
}

const KIND = { pid: 1, error: 2, stdout: 3, stderr: 4, exit: 5, ready: 6 } as const;

/** The native helper's first message: it runs. */
const READY = { id: 0, ready: true } as const;

/** The native helper's messages, from the bytes of its stdout as they come. */
export class FrameReader {
  private buffered: Buffer = Buffer.alloc(0);
  constructor(private readonly onMessage: (m: HelperMessage | typeof READY) => void) {}

  push(chunk: Buffer): void {
    let buf = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (buf.length >= 4) {
      const len = buf.readUInt32LE(0);
      if (buf.length < 4 + len) break;
      this.onMessage(decodeMessage(buf.subarray(4, 4 + len)));
      buf = buf.subarray(4 + len);
    }
    this.buffered = buf;
  }
}

function decodeMessage(frame: Buffer): HelperMessage | typeof READY {
  const id = frame.readUInt32LE(0);
  const kind = frame[4];
  switch (kind) {
    case KIND.ready:
      return READY;
    case KIND.pid:
      return { id, pid: frame.readInt32LE(5) };
    case KIND.error:
      return { id, error: errnoName(frame.readInt32LE(5)) };
    case KIND.stdout:
    case KIND.stderr:
      // A copy: the frame's bytes are a view of a buffer that the next chunk may replace.
      return { id, fd: kind === KIND.stdout ? 1 : 2, data: Buffer.from(frame.subarray(5)) };
    default: {
      const code = frame.readInt32LE(5);
      const signal = frame.readInt32LE(9);
      return { id, code: signal === 0 ? code : null, signal: signal === 0 ? null : signalName(signal) };
    }
  }
}

/** `ENOENT` for 2: a spawn's error as Node names it. */
function errnoName(errno: number): string {
  const name = Object.entries(os.constants.errno).find(([, n]) => n === errno)?.[0];
  return name ?? `errno ${errno}`;
}

function signalName(n: number): NodeJS.Signals {
  return (Object.entries(os.constants.signals).find(([, v]) => v === n)?.[0] ?? 'SIGKILL') as NodeJS.Signals;
}

/**
 * The native helper built from native/spawner.c (scripts/build-native.mjs), or null: it is looked
 * for in native/build/ of the package this module is part of, from its sources, dist/ or a bundle
 * of them.
 */
export function builtNativeHelper(): string | null {
  if (process.platform === 'win32') return null;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = path.join(dir, 'native', 'build', 'svc-spawner');
    if (existsSync(file)) return file;
    dir = path.dirname(dir);
  }
  return null;
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
    if (helper.agents.size === 0) helper.hold(false);
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

/** Signals a process group (an agent leads one: its pid is the group's id). */
export function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // the group is gone
  }
}
