import { existsSync, mkdirSync, readFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { jsonTextTooDeep } from '../../shared/json-depth.js';
import { merged } from '../../shared/merged.js';
import type { RunAgentManifest, RunLogLine } from '../../shared/protocol.js';
import { type Spawn, signalGroup } from './spawner.js';

/** How deep an agent's outputs may nest (well within the hub's body limit, see agent.ts). */
export const MAX_OUTPUT_DEPTH = 100;

/**
 * One `exec` agent as a child process (CONTRACT.md §5): its own process group (so a stop reaches
 * whatever it started), a minimal environment with the SVC_* values, a timeout, exit 0 = success, outputs read from the
 * JSON file named by SVC_OUTPUT, stdout/stderr lines handed to `onLine`.
 */
export interface AgentRun {
  /** The agent's pid once it runs (null when it could not start). */
  pid: Promise<number | null>;
  /** Resolves when the process ended (never rejects). */
  result: Promise<{ ok: true; outputs: unknown } | { ok: false; error: string }>;
  /** SIGTERM to the process group, then SIGKILL after `graceMs`. */
  stop(graceMs: number): void;
}

export interface AgentSpec {
  manifest: RunAgentManifest;
  cwd: string;
  /** The folder `cwd` is there already. */
  cwdReady?: boolean;
  outputFile: string;
  env: Record<string, string>;
  /** The phase's secrets as environment variables (over the manifest's env, under SVC_* values). */
  secrets?: Record<string, string>;
  onLine(line: RunLogLine): void;
  /** Starts the process (the daemon's spawner.ts). */
  spawn: Spawn;
}

/**
 * What an agent inherits from the daemon's environment: the names a program needs to run (search
 * path, home, user, locale, time zone, temporary folder, terminal, proxies and CA certificates),
 * nothing else. The daemon's own settings and credentials (`SVC_REALM_TOKEN`, `SVC_HUB_URL`, …) are
 * not among them, and a value that holds a svc token is dropped whatever its name.
 */
const INHERITED = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  'TERM',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
  'SYSTEMROOT',
  'WINDIR',
  'COMSPEC',
  'PATHEXT',
]);
const SVC_SECRET = /svc_(dt|tok|lt|inv)_/;

/** The base environment of an agent, taken from the daemon's (see INHERITED). */
function baseEnvironment(parent: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(parent)) {
    if (v === undefined || SVC_SECRET.test(v)) continue;
    if (INHERITED.has(k) || k.startsWith('LC_')) env[k] = v;
  }
  return env;
}

/**
 * The daemon's part of every agent's environment, read once: listing `process.env` copies the whole
 * environment of the process each time, and the daemon's own does not change while it runs.
 */
let inherited: Record<string, string> | null = null;

/** An agent's environment: the base, then each of `layers` over the ones before. */
function agentEnvironment(...layers: Record<string, string>[]): Record<string, string> {
  inherited ??= baseEnvironment(process.env);
  return layers.reduce<Record<string, string>>((env, layer) => merged(env, layer), inherited);
}

/**
 * Removes a file if it is there. It usually is not (one left by an interrupted phase of the same
 * epoch): a look costs one system call and no error, where a failed `unlink` builds an exception.
 */
function removeFile(file: string): void {
  if (existsSync(file)) unlinkSync(file);
}

/**
 * The text of the agent's outputs file (null: it wrote none), which is then removed, whatever the
 * agent's exit: the outputs travel on in the run's reports, and the folder holds every run's.
 */
function takeOutputs(file: string): string | null {
  if (!existsSync(file)) return null;
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch {}
  try {
    unlinkSync(file);
  } catch {}
  return text;
}

/** Signals the agent's process group once it runs. */
function signalAgent(pid: Promise<number | null>, sig: NodeJS.Signals): void {
  void pid.then((p) => {
    if (p !== null) signalGroup(p, sig);
  });
}

/** The outputs folders this process has made (one per daemon home): made once, not per agent. */
const outputFolders = new Set<string>();

/**
 * Makes the agent's folder if it is not there: one `mkdir` for a new run's folder, whose parent is
 * there (a recursive `mkdir` costs three times as much here), the recursive one otherwise.
 */
function ensureFolder(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') mkdirSync(dir, { recursive: true });
    else if (code !== 'EEXIST') throw err;
  }
}

export function startAgent(spec: AgentSpec): AgentRun {
  const { manifest } = spec;
  if (!spec.cwdReady) ensureFolder(spec.cwd);
  const outputs = path.dirname(spec.outputFile);
  if (!outputFolders.has(outputs)) {
    mkdirSync(outputs, { recursive: true, mode: 0o700 });
    outputFolders.add(outputs);
  }
  removeFile(spec.outputFile);
  const [cmd, ...args] = manifest.command;
  const child = spec.spawn(cmd!, args, {
    cwd: spec.cwd,
    // The manifest's `env`, the phase's secrets over it, then the daemon's SVC_* values.
    env: agentEnvironment(manifest.env, spec.secrets ?? {}, spec.env, { SVC_OUTPUT: spec.outputFile }),
  });
  let timedOut = false;
  let stopped = false;
  let killTimer: NodeJS.Timeout | null = null;
  const stop = (graceMs: number) => {
    if (stopped) return;
    stopped = true;
    signalAgent(child.pid, 'SIGTERM');
    killTimer = setTimeout(() => signalAgent(child.pid, 'SIGKILL'), graceMs);
    killTimer.unref();
  };
  const timeout = setTimeout(() => {
    timedOut = true;
    stop(2_000);
  }, manifest.timeout_ms);
  timeout.unref();
  for (const [stream, src] of [
    ['stdout', child.stdout],
    ['stderr', child.stderr],
  ] as const) {
    createInterface({ input: src, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (text) =>
      spec.onLine({ stream, text, at: Date.now() }),
    );
  }
  const result = child.exit.then((exit): { ok: true; outputs: unknown } | { ok: false; error: string } => {
    clearTimeout(timeout);
    if (killTimer) clearTimeout(killTimer);
    const text = takeOutputs(spec.outputFile);
    if ('error' in exit) return { ok: false, error: `could not start ${cmd}: ${exit.error}` };
    const { code, signal } = exit;
    // Whatever the agent started in its group goes with it.
    if (code === null) signalAgent(child.pid, 'SIGKILL');
    if (timedOut) return { ok: false, error: `timed out after ${manifest.timeout_ms} ms` };
    if (code !== 0) {
      return {
        ok: false,
        error: signal ? `the agent was stopped by ${signal}` : `the agent exited with code ${code}`,
      };
    }
    if (text === null || text.trim() === '') return { ok: true, outputs: {} };
    // Outputs travel on inside other bodies (reports, later phases, child runs), each adding
    // levels, and the hub refuses bodies nested deeper than MAX_JSON_DEPTH.
    if (jsonTextTooDeep(text, MAX_OUTPUT_DEPTH)) {
      return { ok: false, error: `SVC_OUTPUT is nested deeper than ${MAX_OUTPUT_DEPTH} levels` };
    }
    try {
      const value: unknown = JSON.parse(text);
      // Outputs are an object (or a list); anything else is kept as {value}.
      return { ok: true, outputs: value !== null && typeof value === 'object' ? value : { value } };
    } catch (e) {
      return { ok: false, error: `SVC_OUTPUT is not valid JSON: ${(e as Error).message}` };
    }
  });
  return { pid: child.pid, result, stop };
}
