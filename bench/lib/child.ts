/**
 * Bench child processes: a parent starts one of bench/lib/*-process.ts and talks to it in JSON lines
 * (requests on the child's stdin, replies on its stdout; the child's logs must stay off stdout).
 * Used to keep a load generator or a measured server off the bench process's event loop and heap.
 *
 * The children run as compiled JavaScript, as a deployed hub or daemon does, not under tsx: once per
 * bench run, esbuild bundles them (the sources, not the packages) into .bench-dist/. tsx compiles
 * each module as it loads it, through a loader thread, which added a second or more to every start
 * and so to every reconnect storm.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = path.join(ROOT, '.bench-dist');
const CHILDREN = ['daemon-process', 'daemons-process', 'hub-process', 'load-process'];

let built: Promise<void> | undefined;

/**
 * The children, bundled once per bench run. Each module keeps its own `import.meta.url` (its source
 * file's), so that the paths it finds relative to itself are those it finds under tsx.
 */
function buildChildren(): Promise<void> {
  built ??= (async () => {
    const esbuild = await import('esbuild');
    await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: CHILDREN.map((c) => path.join(ROOT, 'bench/lib', `${c}.ts`)),
      outdir: OUT,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      logLevel: 'warning',
      plugins: [
        {
          name: 'source-urls',
          setup(build) {
            build.onLoad({ filter: /\.ts$/ }, async (args) => {
              const text = await readFile(args.path, 'utf8');
              if (!text.includes('import.meta.url')) return undefined;
              const url = JSON.stringify(pathToFileURL(args.path).href);
              return { contents: text.replaceAll('import.meta.url', url), loader: 'ts' };
            });
          },
        },
      ],
    });
  })();
  return built;
}

// biome-ignore lint/suspicious/noExplicitAny: JSON messages between processes
type Json = any;

export interface Child {
  pid: number;
  /** The child's first line (`{type: 'ready', ...}`). */
  hello: Json;
  /** Sends `{type, ...msg}` and resolves with the child's reply to it. */
  request(type: string, msg?: Record<string, unknown>, timeoutMs?: number): Promise<Json>;
  /** Asks the child to exit, and kills it when it has not after a few seconds. */
  close(): Promise<void>;
}

export interface ChildOptions {
  args?: string[];
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** Raises the child's open-file limit (`ulimit -n`, up to the hard limit) before it starts. */
  fdLimit?: number;
}

/** Starts `bench/lib/<file>` (bundled, see above) and waits for its ready line. */
export async function startChild(file: string, opts: ChildOptions = {}): Promise<Child> {
  await buildChildren();
  const node = [
    process.execPath,
    // SVC_BENCH_PROFILE=DIR: each child writes a CPU profile there when it exits (node --cpu-prof),
    // sampled every SVC_BENCH_PROFILE_US microseconds (Node's default: 1000).
    ...(process.env.SVC_BENCH_PROFILE
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${process.env.SVC_BENCH_PROFILE}`,
          `--cpu-prof-interval=${Number(process.env.SVC_BENCH_PROFILE_US ?? 1000)}`,
        ]
      : []),
    ...(opts.nodeArgs ?? []),
    path.join(OUT, file.replace(/\.ts$/, '.mjs')),
    ...(opts.args ?? []),
  ];
  const [cmd, ...args] = opts.fdLimit
    ? [
        '/bin/sh',
        '-c',
        'ulimit -n "$0" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"',
        String(opts.fdLimit),
        ...node,
      ]
    : node;
  const proc = spawn(cmd!, args, {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, SVC_LOG_LEVEL: 'silent', ...opts.env },
  });
  const waiting = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>();
  let hello: ((v: Json) => void) | null = null;
  let failed: Error | null = null;
  const ready = new Promise<Json>((resolve) => {
    hello = resolve;
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const fail = (err: Error) => {
    failed = err;
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  };
  proc.once('exit', (code, signal) => fail(new Error(`bench child ${file} exited (${code ?? signal})`)));
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    let msg: Json;
    try {
      msg = JSON.parse(line);
    } catch {
      process.stderr.write(`[${file}] ${line}\n`);
      return;
    }
    if (msg.type === 'ready') return hello?.(msg);
    const w = waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.error) w.reject(new Error(`${file}: ${msg.error}`));
    else w.resolve(msg.result);
  });
  let nextId = 0;
  const request = (type: string, msg: Record<string, unknown> = {}, timeoutMs = 120_000) =>
    new Promise<Json>((resolve, reject) => {
      if (failed) return reject(failed);
      const id = ++nextId;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`${file}: no reply to ${type} within ${timeoutMs} ms`));
      }, timeoutMs);
      waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      proc.stdin!.write(`${JSON.stringify({ id, type, ...msg })}\n`);
    });
  const first = await Promise.race([
    ready,
    exited.then(() => {
      throw failed ?? new Error(`bench child ${file} exited before it was ready`);
    }),
  ]);
  return {
    pid: proc.pid!,
    hello: first,
    request,
    async close() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.stdin!.write(`${JSON.stringify({ id: 0, type: 'exit' })}\n`);
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * The child's side: announces `ready` with `hello`, then answers each request line with its
 * handler's result. `exit` runs `onExit` and ends the process.
 */
export function serveParent(
  hello: Record<string, unknown>,
  handlers: Record<string, (msg: Json) => unknown>,
  onExit: () => Promise<void> = async () => {},
): void {
  const write = (obj: unknown) => process.stdout.write(`${JSON.stringify(obj)}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    const msg = JSON.parse(line) as Json;
    if (msg.type === 'exit') {
      void onExit().finally(() => process.exit(0));
      return;
    }
    const handler = handlers[msg.type];
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`unknown request ${msg.type}`);
        return handler(msg);
      })
      .then(
        (result) => write({ id: msg.id, result: result ?? null }),
        (err: Error) => write({ id: msg.id, error: err.stack ?? String(err) }),
      );
  });
  // The parent went away: nothing left to serve.
  process.stdin.on('end', () => void onExit().finally(() => process.exit(0)));
  write({ type: 'ready', ...hello });
}

/** This process's memory, after a full collection when the process runs with --expose-gc. */
export function memory(): { rss: number; heapUsed: number; heapTotal: number; external: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) for (let i = 0; i < 3; i++) gc();
  // SVC_BENCH_HEAP=DIR: a heap snapshot of the process at each measure, for a closer look.
  const dir = process.env.SVC_BENCH_HEAP;
  if (dir)
    writeHeapSnapshot(
      path.join(dir, `${process.argv[2] ?? 'child'}-${process.pid}-${Date.now()}.heapsnapshot`),
    );
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external };
}
