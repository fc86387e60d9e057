import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The real `svc` executable, never a stale dist/: it runs the bundle scripts/test.mjs built from the
 * sources for this suite run (SVC_TEST_CLI_DIST, passed on as SVC_CLI_DIST), or, when a test file is run
 * without it, the sources themselves through tsx (SVC_CLI_SOURCE=1).
 */
export const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The parent's environment without any SVC_* variable (so a developer's SVC_TOKEN never leaks in),
 * with `extra`; the CLI that runs is the suite's unless `extra` names one (SVC_CLI_DIST).
 */
export function cleanEnv(extra: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_') && v !== undefined) env[k] = v;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  if (env.SVC_CLI_DIST === undefined) {
    const tree = process.env.SVC_TEST_CLI_DIST;
    if (tree) env.SVC_CLI_DIST = tree;
    else env.SVC_CLI_SOURCE = '1';
  }
  return env;
}

const children = new Set<ChildProcess>();

/** Runs `svc ...args` to completion. */
export function runCli(
  args: string[],
  opts: { env: Record<string, string | undefined>; input?: string; cwd?: string },
): Promise<CliResult> {
  const child = spawn(process.execPath, [SVC_BIN, ...args], {
    env: cleanEnv(opts.env),
    cwd: opts.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdin.end(opts.input ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export interface LongRunning {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `re` in stdout (or stderr); fails after `timeoutMs` or on exit. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a long-running `svc` command (hub, dev); `killChildren()` in `after` ends any left over. */
export function startCli(
  args: string[],
  opts: { env: Record<string, string | undefined>; cwd?: string },
): LongRunning {
  const child = spawn(process.execPath, [SVC_BIN, ...args], {
    env: cleanEnv(opts.env),
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  let closed = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      closed = true;
      children.delete(child);
      resolve(code);
    }),
  );
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitFor(re, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = re.exec(out) ?? re.exec(err);
          if (!m) return false;
          done();
          resolve(m);
          return true;
        };
        const onExit = () => {
          if (check()) return;
          done();
          reject(new Error(`svc ${args.join(' ')} exited before printing ${re}\n${out}\n${err}`));
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`svc ${args.join(' ')} did not print ${re} in ${timeoutMs} ms\n${out}\n${err}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          child.stdout!.off('data', check);
          child.stderr!.off('data', check);
          child.off('close', onExit);
        };
        if (check()) return;
        if (closed) return onExit();
        // Listeners run after the accumulating ones above, so `out`/`err` are current.
        child.stdout!.on('data', check);
        child.stderr!.on('data', check);
        child.on('close', onExit);
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Kills every child still running (call in `after`) and answers how many there were. */
export async function killChildren(): Promise<number> {
  const left = [...children];
  await Promise.all(
    left.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('close', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
  children.clear();
  return left.length;
}
