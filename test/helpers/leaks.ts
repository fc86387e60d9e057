/**
 * Loaded into every test file's process (scripts/test.mjs): when the file's tests are done, whatever
 * is still open — a socket, a server, a child process, a timer, a database file — fails the file,
 * named, and the process then exits instead of hanging on it.
 */
import { createHook } from 'node:async_hooks';
import { readdirSync, readlinkSync } from 'node:fs';
import { after } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';

/** How long closes that are already under way may take to finish before they count as leaks. */
const SETTLE_MS = Number(process.env.SVC_TEST_LEAK_SETTLE_MS ?? 2_000);

/** Timers are not handles: they are followed from their creation to name them later. */
type Timer = NodeJS.Timeout & { _onTimeout?: { name?: string }; _idleTimeout?: number; _destroyed?: boolean };
const timers = new Set<Timer>();
createHook({
  init(_id, type, _trigger, resource) {
    if (type === 'Timeout') timers.add(resource as Timer);
  },
}).enable();

function liveTimers(): string[] {
  const out: string[] = [];
  for (const t of timers) {
    if (t._destroyed) {
      timers.delete(t);
      continue;
    }
    if (t.hasRef()) out.push(`timer ${t._onTimeout?.name || '(anonymous)'} (${t._idleTimeout} ms)`);
  }
  return out;
}

interface Handle {
  constructor?: { name?: string };
  [key: string]: unknown;
}

/** A readable name of one handle that keeps the event loop alive. */
function describeHandle(h: Handle): string | null {
  const kind = h.constructor?.name ?? 'handle';
  // The test runner's own channel to its parent and the standard streams are not leaks.
  if (
    h === (process.stdout as unknown) ||
    h === (process.stderr as unknown) ||
    h === (process.stdin as unknown)
  )
    return null;
  if (kind === 'ChildProcess') {
    const args = (h.spawnargs as string[] | undefined)?.join(' ') ?? '?';
    return `child process ${h.pid as number} (${args.slice(0, 200)})`;
  }
  if (kind === 'Server' || kind === 'WebSocketServer') {
    const addr = (h.address as (() => unknown) | undefined)?.call(h);
    return `server listening on ${JSON.stringify(addr)}`;
  }
  if (kind === 'Socket' || kind === 'TLSSocket') {
    const s = h as unknown as {
      remoteAddress?: string;
      remotePort?: number;
      localPort?: number;
      _type?: string;
    };
    if (s.remoteAddress === undefined && s.localPort === undefined) return null; // a pipe of this process
    return `socket ${s.remoteAddress}:${s.remotePort} (local port ${s.localPort})`;
  }
  return kind;
}

/** Database files this process still holds open (better-sqlite3 keeps no event-loop handle). */
function openDatabaseFiles(): string[] {
  try {
    const out: string[] = [];
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        const target = readlinkSync(`/proc/self/fd/${fd}`);
        if (/\.db(-wal|-shm)?$/.test(target)) out.push(`database file ${target}`);
      } catch {}
    }
    return out;
  } catch {
    return []; // not Linux
  }
}

export function openResources(): string[] {
  const handles = (process as unknown as { _getActiveHandles(): Handle[] })._getActiveHandles();
  const named = handles.map(describeHandle).filter((d): d is string => d !== null);
  return [...named, ...liveTimers(), ...openDatabaseFiles()];
}

/**
 * The root's `after` hooks run in order and this one is registered first: it only schedules the
 * look, which happens once the file's own cleanup is done. With nothing open the process simply
 * exits before it; otherwise the look names what is open and ends the process with exit code 1,
 * which fails the file.
 */
after(() => {
  setTimeout(() => void checkForLeaks(), 0).unref();
});

async function checkForLeaks(): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  let open = openResources();
  while (open.length > 0 && Date.now() < deadline) {
    await tick();
    await new Promise((r) => setTimeout(r, 20).unref());
    open = openResources();
  }
  if (open.length === 0) return;
  const file = process.argv.slice(1).find((a) => /\.[jt]s$/.test(a)) ?? 'this test file';
  process.stderr.write(`\n${file} left open when its tests were done:\n  ${open.join('\n  ')}\n`);
  process.exit(1);
}
